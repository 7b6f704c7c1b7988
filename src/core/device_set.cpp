#include "core/device_set.hpp"

#include <algorithm>

#include "core/parse.hpp"

namespace sb {

DeviceSet DeviceSet::parse(std::string_view spec) {
    DeviceSet d;
    if (!spec.empty())
        d.names_ = split_list(spec, '+');
    return d;
}

std::string DeviceSet::str() const {
    std::string s;
    for (std::size_t i = 0; i < names_.size(); ++i) {
        if (i)
            s += '+';
        s += names_[i];
    }
    return s;
}

bool DeviceSet::contains(std::string_view name) const {
    return std::find(names_.begin(), names_.end(), name) != names_.end();
}

}  // namespace sb
