#pragma once
// The environment variables that steer llama.cpp's backends, recorded in every result document
// (system.backend_env) so that a run made with a backend knob (GGML_HEXAGON_OPSTAGE=0x1,
// GGML_CPU_DISABLE_FUSION=1, LLAMA_GRAPH_REUSE_DISABLE=1, ...) says so. Backends read these when
// they initialise: only what the process started with counts.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sb {

// Variable name prefixes recorded: GGML_, LLAMA_, ADSP_, OMP_, KMP_, GOMP_.
const std::vector<std::string>& backend_env_prefixes();

// The variable that names further variables to record (a comma list): decompose --mode sets it
// in its children to the names its modes set, whatever their prefix.
inline constexpr const char* kRecordEnvVariable = "STAGEBENCH_RECORD_ENV";

// {name: value} of the variables of env (NAME=VALUE strings, as environ) whose name has one of
// the prefixes or is named in STAGEBENCH_RECORD_ENV (itself not recorded); names in order.
nlohmann::json backend_env_of(const std::vector<std::string>& env);

// backend_env_of(the environment this process started with: /proc/self/environ, else environ).
nlohmann::json backend_env();

}  // namespace sb
