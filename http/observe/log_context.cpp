#include "http/observe/log_context.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <memory>

namespace bitnet::http {

namespace {

thread_local const log_fields* current = nullptr;
std::atomic<bool> json_on{false};

/// A JSON string literal of `s` (escaped as JSON requires, invalid UTF-8 replaced).
std::string json_literal(std::string_view s) {
    return boost::json::serialize(boost::json::string(s));
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(us / 1000000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<long long>(us % 1000000));
    return buf;
}

class json_formatter final : public spdlog::formatter {
public:
    explicit json_formatter(std::string node)
        : node_(std::move(node)) {}

    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        const auto level = spdlog::level::to_string_view(msg.level);
        const auto line =
            json_log_line(rfc3339(msg.time), std::string(level.data(), level.size()),
                          cut_log_message(std::string_view(msg.payload.data(), msg.payload.size())),
                          node_, current);
        dest.append(line.data(), line.data() + line.size());
        dest.push_back('\n');
    }
    [[nodiscard]] std::unique_ptr<spdlog::formatter> clone() const override {
        return std::make_unique<json_formatter>(node_);
    }

private:
    std::string node_;
};

/// Text lines as spdlog's default pattern writes them, with the message's control characters
/// escaped (escape_controls): a value a client sent cannot end the line and start a forged one.
class text_formatter final : public spdlog::formatter {
public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        const std::string_view payload(msg.payload.data(), msg.payload.size());
        const auto escaped = escape_controls(
            payload.size() > max_log_message_bytes ? cut_log_message(payload) : payload);
        if (escaped.size() == payload.size())
            return inner_.format(msg, dest); // nothing to escape (the common case): no copy
        auto copy = msg;
        copy.payload = spdlog::string_view_t(escaped.data(), escaped.size());
        inner_.format(copy, dest);
    }
    [[nodiscard]] std::unique_ptr<spdlog::formatter> clone() const override {
        return std::make_unique<text_formatter>();
    }

private:
    spdlog::pattern_formatter inner_;
};

/// The bytes of the character at s[i] that a text log escapes, or 0: C0, DEL, C1 (U+0080..U+009F,
/// UTF-8 C2 80..9F), the line and paragraph separators U+2028/2029 (a JavaScript reader's line
/// ends), and the bidirectional controls (U+061C, U+200E/200F, U+202A..202E, U+2066..2069, which
/// reorder what a terminal shows). `cp` is its code point.
std::size_t control_at(std::string_view s, std::size_t i, std::uint32_t& cp) {
    const auto c = static_cast<unsigned char>(s[i]);
    auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    if (c < 0x20 || c == 0x7F) {
        cp = c;
        return 1;
    }
    if (c == 0xC2 && i + 1 < s.size() && at(1) >= 0x80 && at(1) <= 0x9F) {
        cp = at(1);
        return 2;
    }
    if (c == 0xD8 && i + 1 < s.size() && at(1) == 0x9C) {
        cp = 0x061C;
        return 2;
    }
    if ((c != 0xE2) || i + 2 >= s.size())
        return 0;
    cp = 0x2000u | ((at(1) & 0x3Fu) << 6) | (at(2) & 0x3Fu);
    const bool hit =
        (at(1) == 0x80 && (at(2) == 0x8E || at(2) == 0x8F || (at(2) >= 0xA8 && at(2) <= 0xAE))) ||
        (at(1) == 0x81 && at(2) >= 0xA6 && at(2) <= 0xA9);
    return hit ? 3 : 0;
}

} // namespace

std::string escape_controls(std::string_view s) {
    std::uint32_t cp = 0;
    std::size_t i = 0;
    while (i < s.size() && control_at(s, i, cp) == 0)
        ++i;
    if (i == s.size())
        return std::string(s);
    static constexpr char hex[] = "0123456789abcdef";
    std::string out(s.substr(0, i));
    while (i < s.size()) {
        const auto n = control_at(s, i, cp);
        if (n == 0) {
            out += s[i++];
            continue;
        }
        i += n;
        if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (cp == '\t') {
            out += "\\t";
        } else if (cp > 0xFF) {
            out += "\\u";
            for (int shift = 12; shift >= 0; shift -= 4)
                out += hex[(cp >> shift) & 15];
        } else {
            out += "\\x";
            out += hex[cp >> 4];
            out += hex[cp & 15];
        }
    }
    return out;
}

namespace {

/// At most `max` bytes of `s` (cut at a character's start), saying how many were left out.
std::string cut_at(std::string_view s, std::size_t max) {
    if (s.size() <= max)
        return std::string(s);
    std::size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80)
        --n;
    return std::string(s.substr(0, n)) + "... (" + std::to_string(s.size() - n) +
           " more bytes not logged)";
}

} // namespace

std::string cut_log_message(std::string_view s) {
    return cut_at(s, max_log_message_bytes);
}

void use_text_logs() {
    spdlog::set_formatter(std::make_unique<text_formatter>());
}

log_scope::log_scope(log_fields f)
    : fields_(std::move(f))
    , outer_(current) {
    current = &fields_;
}

log_scope::~log_scope() {
    current = outer_;
}

const log_fields* current_log_fields() noexcept {
    return current;
}

std::string json_log_line(const std::string& time, const std::string& level,
                          const std::string& message, const std::string& node,
                          const log_fields* f) {
    std::string out = "{\"time\":" + json_literal(time) + ",\"level\":" + json_literal(level) +
                      ",\"message\":" + json_literal(message);
    if (!node.empty())
        out += ",\"node\":" + json_literal(node);
    auto field = [&](const char* name, const std::string& v) {
        if (!v.empty())
            out += std::string(",\"") + name + "\":" + json_literal(v);
    };
    if (f) {
        field("request_id", f->request_id);
        field("trace_id", f->trace_id);
        field("span_id", f->span_id);
        field("model", cut_at(f->model, max_log_field_bytes));
    }
    out += '}';
    return out;
}

bool json_logs() noexcept {
    return json_on.load(std::memory_order_relaxed);
}

void use_json_logs(const std::string& node) {
    json_on.store(true, std::memory_order_relaxed);
    spdlog::set_formatter(std::make_unique<json_formatter>(node));
}

} // namespace bitnet::http
