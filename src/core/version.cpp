#include "core/version.hpp"

namespace sb {

const char* tool_version() {
    return SB_VERSION;
}

}  // namespace sb
