#pragma once

namespace sb {

// stagebench's own version (the CMake project version), as written into result documents;
// the static agent's adds "+agent.<isa>" ("0.1.0+agent.armv8.2").
const char* tool_version();

}  // namespace sb
