#include "http/observe/log_context.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
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
                          std::string(msg.payload.data(), msg.payload.size()), node_, current);
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
        const auto escaped = escape_controls(payload);
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

/// Whether s[i] starts a control character: C0, DEL, or C1 (U+0080..U+009F, UTF-8 C2 80..9F).
bool control_at(std::string_view s, std::size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F)
        return true;
    if (c != 0xC2 || i + 1 >= s.size())
        return false;
    const auto next = static_cast<unsigned char>(s[i + 1]);
    return next >= 0x80 && next <= 0x9F;
}

} // namespace

std::string escape_controls(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size() && !control_at(s, i))
        ++i;
    if (i == s.size())
        return std::string(s);
    static constexpr char hex[] = "0123456789abcdef";
    std::string out(s.substr(0, i));
    for (; i < s.size(); ++i) {
        if (!control_at(s, i)) {
            out += s[i];
            continue;
        }
        auto c = static_cast<unsigned char>(s[i]);
        if (c == 0xC2)
            c = static_cast<unsigned char>(s[++i]); // a C1 control, escaped as its code point
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
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
        field("model", f->model);
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
