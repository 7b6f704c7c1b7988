#include "core/version.hpp"

namespace sb {

const char* tool_version() {
#ifdef SB_AGENT_ISA
    return SB_VERSION "+agent." SB_AGENT_ISA;  // the static agent (STAGEBENCH_AGENT=ON)
#else
    return SB_VERSION;
#endif
}

}  // namespace sb
