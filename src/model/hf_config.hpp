#pragma once
// A Hugging Face config.json (the small file on every model page) read as a ModelSpec: the same
// reading for `synth --config FILE` and for the presets (each preset file carries its model's
// config.json, model/presets.hpp), so a preset and its config.json give the same model.
// Which keys mean what follows transformers' config classes and the pinned llama.cpp
// converter (conversion/<family>.py): the defaults a config may leave out are those classes'
// defaults.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/arch.hpp"

namespace sb {

// The config.json model_type values the writer supports, sorted.
std::vector<std::string> supported_model_types();

// Reads a parsed config.json. origin names it in messages ("config.json", "qwen3-0.6b.json").
// Throws sb::Error(ErrorKind::input) with one line that names the field: a model_type outside
// supported_model_types() (the line lists them), a field the architecture needs that is
// missing or of the wrong type, or shapes that do not fit together (heads not dividing the
// width, KV heads not dividing the heads, per-layer lists of the wrong length, ...).
ModelSpec spec_from_hf_config(const nlohmann::json& config, const std::string& origin);

// Parses the text of a config.json or a preset file; origin names it in messages. Throws
// sb::Error(input), one line: text that is not JSON ("<origin>: not JSON (...)"), arrays and
// objects nested more than kMaxDocumentDepth (64) deep (core/document.hpp), a number no double
// holds ("<origin>: rope_theta is 1e999, a number beyond any double").
nlohmann::json parse_config_text(const std::string& text, const std::string& origin);

// Reads the file at path (a regular file: read_input_file, core/file_io.hpp, refuses a FIFO, a
// device or a directory), parse_config_text(), then spec_from_hf_config(). Throws
// sb::Error(input), one line naming the file.
ModelSpec read_hf_config(const std::string& path);

}  // namespace sb
