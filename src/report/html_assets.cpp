#include "report/html_assets.hpp"

#include <string>

#include "core/error.hpp"

namespace sb {

const EmbeddedFile& embedded_file(std::string_view name) {
    for (const auto& f : embedded_files())
        if (f.name == name)
            return f;
    throw runtime_error("this build has no embedded file '" + std::string(name) + "'");
}

}  // namespace sb
