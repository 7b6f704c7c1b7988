#pragma once
// The closed vocabularies of the result document and the command line, as enums. Each is
// spelled in JSON and on the command line exactly as it was when these were strings:
//   Status       "ok" | "failed" | "interrupted"                      (TestResult::status)
//   StopReason   "reps" | "target_ci" | "max_reps" | "error" | "interrupt"
//   EngineKind   "llama" (in-process llama.cpp) | "http" (a server)
//   FlashAttn    "auto" | "on" | "off"
//   KvType       "f32" | "f16" | "bf16" | "q8_0" | "q4_0" | "q4_1" | "iq4_nl" | "q5_0" | "q5_1"
//                (the KV cache types llama.cpp's tools accept, spelled as ggml names them)
//   ErrorKind    "usage" | "input" | "runtime"                        (TestResult::error_kind)
//   PassStatus   "ok" | "error"                  (a step that succeeds or not: a traced pass)
//   MetricKind   "gauge" | "counter"                                  (a telemetry metric)
//   TelemetryMode "auto" | "on" | "off"                               (--telemetry)
//   ClientKind   "thread" | "loop"                                    (serve --client)
//   OutputFormat "md" | "csv" | "json" | "jsonl" | "html"
// to_string() gives the spelling; parse_enum<E>() reads one back (nullopt for any other text,
// case-sensitive: the caller says what was wrong and where), enum_from_text<E>() the same for
// the command line (a usage error otherwise); enum_spellings<E>() lists them for messages ("ok,
// failed, interrupted"). FlashAttn also reads llama-bench's "1" and "0" (on, off); it is always
// written as "on" and "off".
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.hpp"

namespace sb {

enum class Status { ok, failed, interrupted };
enum class StopReason { reps, target_ci, max_reps, error, interrupt };
enum class EngineKind { llama, http };
enum class FlashAttn { automatic, on, off };
enum class KvType { f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1 };
enum class PassStatus { ok, error };
enum class MetricKind {
    gauge,    // an instantaneous value
    counter,  // a cumulative count that only grows (except at its wrap range)
};
enum class TelemetryMode { automatic, on, off };
enum class ClientKind { thread, loop };
enum class OutputFormat { md, csv, json, jsonl, html };

// The spelling table of each enum; specialised below, nothing else needs to.
template <class E>
struct EnumSpelling;

template <>
struct EnumSpelling<Status> {
    static constexpr std::array names{std::pair{Status::ok, "ok"},
                                      std::pair{Status::failed, "failed"},
                                      std::pair{Status::interrupted, "interrupted"}};
};
template <>
struct EnumSpelling<StopReason> {
    static constexpr std::array names{
        std::pair{StopReason::reps, "reps"}, std::pair{StopReason::target_ci, "target_ci"},
        std::pair{StopReason::max_reps, "max_reps"}, std::pair{StopReason::error, "error"},
        std::pair{StopReason::interrupt, "interrupt"}};
};
template <>
struct EnumSpelling<EngineKind> {
    static constexpr std::array names{std::pair{EngineKind::llama, "llama"},
                                      std::pair{EngineKind::http, "http"}};
};
template <>
struct EnumSpelling<FlashAttn> {
    static constexpr std::array names{std::pair{FlashAttn::automatic, "auto"},
                                      std::pair{FlashAttn::on, "on"},
                                      std::pair{FlashAttn::off, "off"}};
    static constexpr std::array aliases{std::pair{FlashAttn::on, "1"},
                                        std::pair{FlashAttn::off, "0"}};
};
template <>
struct EnumSpelling<KvType> {
    static constexpr std::array names{
        std::pair{KvType::f32, "f32"},       std::pair{KvType::f16, "f16"},
        std::pair{KvType::bf16, "bf16"},     std::pair{KvType::q8_0, "q8_0"},
        std::pair{KvType::q4_0, "q4_0"},     std::pair{KvType::q4_1, "q4_1"},
        std::pair{KvType::iq4_nl, "iq4_nl"}, std::pair{KvType::q5_0, "q5_0"},
        std::pair{KvType::q5_1, "q5_1"}};
};
template <>
struct EnumSpelling<ErrorKind> {
    static constexpr std::array names{std::pair{ErrorKind::usage, "usage"},
                                      std::pair{ErrorKind::input, "input"},
                                      std::pair{ErrorKind::runtime, "runtime"}};
};
template <>
struct EnumSpelling<PassStatus> {
    static constexpr std::array names{std::pair{PassStatus::ok, "ok"},
                                      std::pair{PassStatus::error, "error"}};
};
template <>
struct EnumSpelling<MetricKind> {
    static constexpr std::array names{std::pair{MetricKind::gauge, "gauge"},
                                      std::pair{MetricKind::counter, "counter"}};
};
template <>
struct EnumSpelling<TelemetryMode> {
    static constexpr std::array names{std::pair{TelemetryMode::automatic, "auto"},
                                      std::pair{TelemetryMode::on, "on"},
                                      std::pair{TelemetryMode::off, "off"}};
};
template <>
struct EnumSpelling<ClientKind> {
    static constexpr std::array names{std::pair{ClientKind::thread, "thread"},
                                      std::pair{ClientKind::loop, "loop"}};
};
template <>
struct EnumSpelling<OutputFormat> {
    static constexpr std::array names{
        std::pair{OutputFormat::md, "md"}, std::pair{OutputFormat::csv, "csv"},
        std::pair{OutputFormat::json, "json"}, std::pair{OutputFormat::jsonl, "jsonl"},
        std::pair{OutputFormat::html, "html"}};
};

template <class E>
concept SpelledEnum = requires {
    EnumSpelling<E>::names;
};

template <SpelledEnum E>
std::string to_string(E e) {
    for (const auto& [v, name] : EnumSpelling<E>::names)
        if (v == e)
            return name;
    return "?";  // unreachable for a value of the enum
}

template <SpelledEnum E>
std::optional<E> parse_enum(std::string_view text) {
    for (const auto& [v, name] : EnumSpelling<E>::names)
        if (text == name)
            return v;
    if constexpr (requires { EnumSpelling<E>::aliases; }) {
        for (const auto& [v, name] : EnumSpelling<E>::aliases)
            if (text == name)
                return v;
    }
    return std::nullopt;
}

// "a, b, c" (or joined with sep): every spelling of E in declaration order.
template <SpelledEnum E>
std::string enum_spellings(std::string_view sep = ", ") {
    std::string s;
    for (const auto& [v, name] : EnumSpelling<E>::names) {
        if (!s.empty())
            s += sep;
        s += name;
    }
    return s;
}

// parse_enum(), or sb::Error(usage): "WHAT must be one of a, b, c, not 'TEXT'".
template <SpelledEnum E>
E enum_from_text(std::string_view text, std::string_view what) {
    if (const auto e = parse_enum<E>(text))
        return *e;
    throw usage_error(std::string(what) + " must be one of " + enum_spellings<E>() + ", not '" +
                      std::string(text) + "'");
}

}  // namespace sb
