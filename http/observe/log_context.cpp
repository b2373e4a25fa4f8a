#include "http/observe/log_context.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>
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

} // namespace

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
