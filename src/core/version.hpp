#pragma once

namespace sb {

// stagebench's own version (the CMake project version), as written into result documents.
const char* tool_version();

}  // namespace sb
