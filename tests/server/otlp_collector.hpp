// The test collector (tests/clients/otlp_collector.mjs) as a child process: it receives OTLP/HTTP
// exports and decodes them with the official OpenTelemetry protobuf definitions (an
// implementation this project did not write), one JSON line per span in its output file, which
// the tests read here.
#pragma once

#include "server_process.hpp"

#include <boost/json.hpp>

#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace bitnet::test {

/// One decoded span, as the collector wrote it.
struct collected_span {
    boost::json::object o;

    [[nodiscard]] std::string str(const char* k) const {
        const auto* v = o.if_contains(k);
        return v && v->is_string() ? std::string(v->get_string()) : std::string();
    }
    [[nodiscard]] std::string name() const { return str("name"); }
    [[nodiscard]] std::string trace() const { return str("traceId"); }
    [[nodiscard]] std::string id() const { return str("spanId"); }
    [[nodiscard]] std::string parent() const { return str("parentSpanId"); }
    [[nodiscard]] long double start() const { return std::stold(str("start")); }
    [[nodiscard]] long double end() const { return std::stold(str("end")); }
    [[nodiscard]] const boost::json::object& attrs() const {
        return o.at("attributes").as_object();
    }
    [[nodiscard]] const boost::json::value* attr(const char* k) const {
        return attrs().if_contains(k);
    }
    [[nodiscard]] std::string attr_str(const char* k) const {
        const auto* v = attr(k);
        return v && v->is_string() ? std::string(v->get_string()) : std::string();
    }
    [[nodiscard]] double attr_num(const char* k) const {
        const auto* v = attr(k);
        if (!v)
            return -1;
        if (v->is_string())
            return std::stod(std::string(v->get_string()));
        return v->to_number<double>();
    }
    [[nodiscard]] std::string node() const {
        const auto* r = o.if_contains("resource");
        const auto* n = r ? r->as_object().if_contains("service.instance.id") : nullptr;
        return n && n->is_string() ? std::string(n->get_string()) : std::string();
    }
};

class otlp_collector {
public:
    /// Starts the collector with `args` (e.g. --fail-first 2) and waits for its port.
    explicit otlp_collector(const std::vector<std::string>& args = {}) {
        out_ = dir_.file("spans.jsonl");
        const auto port_file = dir_.file("port");
        const auto log = dir_.file("collector.log");
        const std::string script =
            std::string(BITNET_TEST_DATA_DIR) + "/../clients/otlp_collector.mjs";
        std::vector<std::string> argv_s{"node", script, "--out", out_, "--port-file", port_file};
        argv_s.insert(argv_s.end(), args.begin(), args.end());
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            const auto fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            exec_or_exit(argv_s);
        }
        for (int i = 0; i < 600 && port_ == 0; ++i) {
            std::error_code ec;
            if (std::filesystem::exists(port_file, ec)) {
                const auto b = read_file(port_file);
                const std::string text(b.begin(), b.end());
                if (!text.empty())
                    port_ = static_cast<std::uint16_t>(std::stoi(text));
            }
            if (port_ == 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            int status = 0;
            if (port_ == 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                break;
            }
        }
        const auto b = read_file(log);
        REQUIRE_MESSAGE(port_ != 0, "the test collector did not start (Node.js and the npm "
                                    "packages of tests/clients come with `make deps`): "
                                        << std::string(b.begin(), b.end()));
    }
    ~otlp_collector() { stop(); }
    otlp_collector(const otlp_collector&) = delete;
    otlp_collector& operator=(const otlp_collector&) = delete;

    void stop() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
            pid_ = -1;
        }
    }
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] std::string endpoint() const {
        return "http://127.0.0.1:" + std::to_string(port_);
    }

    /// Every line of the output of `type` ("span", "request", "error") so far.
    [[nodiscard]] std::vector<boost::json::object> lines(const std::string& type) const {
        std::vector<boost::json::object> out;
        std::error_code ec;
        if (!std::filesystem::exists(out_, ec))
            return out;
        const auto b = read_file(out_);
        const std::string text(b.begin(), b.end());
        std::size_t at = 0;
        while (at < text.size()) {
            const auto nl = text.find('\n', at);
            if (nl == std::string::npos)
                break; // a line still being written
            auto v = boost::json::parse(text.substr(at, nl - at));
            at = nl + 1;
            if (v.is_object() && v.as_object().if_contains("type") &&
                v.as_object().at("type").as_string() == type)
                out.push_back(std::move(v.as_object()));
        }
        return out;
    }
    [[nodiscard]] std::vector<collected_span> spans() const {
        std::vector<collected_span> out;
        for (auto& o : lines("span"))
            out.push_back({std::move(o)});
        return out;
    }
    [[nodiscard]] std::vector<collected_span> trace(const std::string& trace_id) const {
        std::vector<collected_span> out;
        for (auto& s : spans())
            if (s.trace() == trace_id)
                out.push_back(std::move(s));
        return out;
    }

private:
    scratch_dir dir_;
    std::string out_;
    pid_t pid_ = -1;
    std::uint16_t port_ = 0;
};

/// The first span named `name` in `spans`, or null.
inline const collected_span* find_span(const std::vector<collected_span>& spans,
                                       const std::string& name) {
    for (const auto& s : spans)
        if (s.name() == name)
            return &s;
    return nullptr;
}

/// Whether following parents from `s` within `spans` reaches span id `root`.
inline bool reaches(const std::vector<collected_span>& spans, const collected_span& s,
                    const std::string& root) {
    std::string at = s.parent();
    for (std::size_t hops = 0; hops <= spans.size() && !at.empty(); ++hops) {
        if (at == root)
            return true;
        const collected_span* up = nullptr;
        for (const auto& x : spans)
            if (x.id() == at)
                up = &x;
        if (!up)
            return false;
        at = up->parent();
    }
    return false;
}

} // namespace bitnet::test
