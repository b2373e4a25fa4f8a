// Log correlation: the fields a log line carries about the request it was written for, and the
// JSON log format (log_format json) that prints them. The HTTP layer sets them for the duration
// of each piece of a session's work (session::safely), so every line written there carries its
// request id and trace id without each call site passing them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace bitnet::http {

struct log_fields {
    std::string request_id;
    std::string trace_id; ///< 32 hex digits, or empty
    std::string span_id;  ///< 16 hex digits, or empty
    std::string model;
};

/// Makes `f` the current thread's fields until it ends (scopes nest: the inner one wins).
class log_scope {
public:
    explicit log_scope(log_fields f);
    ~log_scope();
    log_scope(const log_scope&) = delete;
    log_scope& operator=(const log_scope&) = delete;

private:
    log_fields fields_;
    const log_fields* outer_;
};

/// The current thread's fields, or null outside any scope.
[[nodiscard]] const log_fields* current_log_fields() noexcept;

/// Switches the default logger to one JSON object per line: time (RFC 3339, UTC, microseconds),
/// level, message, node, logger, and the current request's request_id, trace_id, span_id and
/// model when a scope has them.
void use_json_logs(const std::string& node);

/// Switches the default logger's text lines (spdlog's default pattern) to escape control
/// characters in the message: a newline as \n, CR and tab as \r and \t, the other C0, DEL and C1
/// controls as \xHH. A model name, a path or any other value a client sent can then neither start
/// a forged line nor move a terminal's cursor. JSON lines are escaped by JSON itself.
void use_text_logs();

/// `s` with its control characters escaped as use_text_logs writes them (`s` itself when it has
/// none): \n \r \t, \xHH for the other C0, DEL and C1 controls, \uHHHH for U+2028/2029 and the
/// bidirectional controls (U+061C, U+200E/200F, U+202A..202E, U+2066..2069).
[[nodiscard]] std::string escape_controls(std::string_view s);

/// The most of one message a log line writes (text and JSON alike): past it the message is cut
/// (at a character's start) and says how many bytes were left out, so no value a client sent
/// (a model name, a path) costs more log than this per line. A request's model in JSON lines'
/// `model` field is cut at max_log_field_bytes.
inline constexpr std::size_t max_log_message_bytes = 2048;
inline constexpr std::size_t max_log_field_bytes = 128;
[[nodiscard]] std::string cut_log_message(std::string_view s);

/// Whether use_json_logs was called (scopes are worth filling only then).
[[nodiscard]] bool json_logs() noexcept;

/// One log line as use_json_logs writes it (without the newline); for tests.
[[nodiscard]] std::string json_log_line(const std::string& time, const std::string& level,
                                        const std::string& message, const std::string& node,
                                        const log_fields* fields);

} // namespace bitnet::http
