// A real bitnet-server process on a loopback port, serving a tiny model that the project's own
// bitnet-model makes at test time, and a small blocking HTTP client (Boost.Beast) to talk to it.
// Waits are bounded polls for a state (never timing assertions).
#pragma once

#include "support/run_process.hpp"
#include "support/test_data.hpp"

#include <boost/beast/http/verb.hpp>
#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace bitnet::test {

struct http_reply {
    unsigned status = 0;
    std::string body;
    std::string content_type;
    std::string retry_after;
    bool complete = false; ///< the whole response arrived (not cut off mid-body)
    std::map<std::string, std::string> headers{}; ///< every response header, names lower-cased
};

using header_list = std::vector<std::pair<std::string, std::string>>;

/// How long one exchange of http_request may take, whole: a server that never answers fails the
/// test after this. Streams of hundreds of tokens under the sanitizers on a busy 2-core machine
/// take longer than a minute; they pass `long_exchange`.
inline constexpr std::chrono::seconds plain_exchange{60};
inline constexpr std::chrono::seconds long_exchange{300};

/// One request on a fresh connection (the server's keep-alive is exercised elsewhere). `api_key`
/// goes in `Authorization: Bearer` when not empty.
http_reply http_request(std::uint16_t port, boost::beast::http::verb verb,
                        const std::string& target, const std::string& body = {},
                        const std::string& api_key = {}, const header_list& extra_headers = {},
                        std::chrono::seconds deadline = plain_exchange);

/// How a test starts its server beyond the flags.
struct launch_options {
    /// Model management without a key (`--admin-open 1`): the lifecycle tests are not about
    /// roles; the roles test turns this off.
    bool admin_open = true;
    /// Start on the tiny model (`--model`); false leaves the models to the test's own flags or
    /// config file (a `--model` flag would replace a file's list).
    bool model_flag = true;
    /// RLIMIT_NOFILE of the server process; 0 = inherited.
    unsigned max_fds = 0;
    /// The status of GET /health/ready on `port`, for a server that does not speak plain HTTP
    /// (HTTPS); null = a plain GET.
    std::function<unsigned(std::uint16_t port)> ready_status{};
};

/// In a forked child: becomes `args` (the program first: a path, or a name looked up in PATH) or
/// exits with 127.
[[noreturn]] inline void exec_or_exit(std::vector<std::string>& args) {
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
}

/// The bitnet-server executable under test: the build's, or BITNET_TEST_SERVER when set (to run
/// a test against another build, e.g. to see a regression test fail on the old code).
inline std::string server_binary() {
    if (const char* p = std::getenv("BITNET_TEST_SERVER"); p && *p)
        return p;
    return std::string(BITNET_TOOLS_DIR) + "/bitnet-server";
}

/// bitnet-server on 127.0.0.1 with an ephemeral port and a tiny synthetic model.
class server_process {
public:
    /// Makes the model, starts the server and returns once /health/ready answers 200 (bounded).
    explicit server_process(const std::vector<std::string>& extra_args = {},
                            launch_options launch = {});
    ~server_process() {
        if (pid_ > 0 && !reaped_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    server_process(const server_process&) = delete;
    server_process& operator=(const server_process&) = delete;

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] const std::string& model_path() const noexcept { return model_; }
    [[nodiscard]] std::string log() const {
        auto b = read_file(log_);
        return {b.begin(), b.end()};
    }
    [[nodiscard]] bool alive() const { return !reaped_ && ::kill(pid_, 0) == 0; }
    [[nodiscard]] pid_t pid() const noexcept { return pid_; }

    http_reply get(const std::string& target) const {
        return http_request(port_, boost::beast::http::verb::get, target);
    }
    http_reply post(const std::string& target, const std::string& body,
                    const std::string& api_key = {}) const {
        return http_request(port_, boost::beast::http::verb::post, target, body, api_key);
    }
    /// A POST whose answer is a long generation (thousands of tokens, or a stream of hundreds):
    /// bounded by `long_exchange` rather than a minute.
    http_reply post_long(const std::string& target, const std::string& body) const {
        return http_request(port_, boost::beast::http::verb::post, target, body, {}, {},
                            long_exchange);
    }
    http_reply del(const std::string& target) const {
        return http_request(port_, boost::beast::http::verb::delete_, target);
    }

    /// Sends `sig` and waits (bounded) for the exit; returns the exit status, -1 if none.
    int signal_and_wait(int sig) {
        ::kill(pid_, sig);
        for (int i = 0; i < 1200; ++i) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                reaped_ = true;
                return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return -1;
    }

private:
    scratch_dir dir_;
    std::string model_, log_;
    pid_t pid_ = -1;
    bool reaped_ = false;
    std::uint16_t port_ = 0;
};

/// For a test that measures a server's RSS, before it starts the server: AddressSanitizer keeps
/// freed blocks in a quarantine (256 MiB by default) before reusing them, so under it RSS grows
/// with every free whatever the server does. The server inherits this setting: RSS then shows
/// the server's own allocations again, and leaks stay LeakSanitizer's job. No-op without ASan.
inline void without_asan_quarantine() {
#if defined(__SANITIZE_ADDRESS__)
    const char* given = std::getenv("ASAN_OPTIONS");
    const std::string asan_options =
        (given != nullptr && *given != '\0' ? std::string(given) + ":" : std::string()) +
        "quarantine_size_mb=0";
    REQUIRE(::setenv("ASAN_OPTIONS", asan_options.c_str(), 1) == 0);
#endif
}

/// Resident pages of a process (/proc/PID/statm, second field), in bytes.
inline std::uint64_t rss_bytes(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
    std::uint64_t size = 0, resident = 0;
    in >> size >> resident;
    return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

/// The `data:` payloads of an SSE body, in order (OpenAI streams).
inline std::vector<std::string> sse_data(const std::string& body) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while ((at = body.find("data: ", at)) != std::string::npos) {
        const auto end = body.find("\n\n", at);
        out.push_back(body.substr(at + 6, end - at - 6));
        at = end;
    }
    return out;
}

/// The `event:` / `data:` pairs of a native SSE body, in order.
inline std::vector<std::pair<std::string, std::string>> sse_events(const std::string& body) {
    std::vector<std::pair<std::string, std::string>> out;
    std::size_t at = 0;
    while ((at = body.find("event: ", at)) != std::string::npos) {
        const auto nl = body.find('\n', at);
        const auto end = body.find("\n\n", nl);
        out.emplace_back(body.substr(at + 7, nl - at - 7), body.substr(nl + 7, end - nl - 7));
        at = end;
    }
    return out;
}

/// Polls `pred` every 50 ms for up to `limit`; whether it held.
inline bool eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
        if (pred())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return pred();
}

/// How many times `what` occurs in `text` (log lines, events).
inline std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

/// The value of one sample line of the Prometheus text (`name{labels} value`), 0 when absent.
inline double sample(const std::string& metrics, const std::string& series) {
    const auto at = metrics.find("\n" + series + " ");
    return at == std::string::npos ? 0.0 : std::stod(metrics.substr(at + series.size() + 2));
}

inline boost::json::object parse_object(const std::string& body) {
    return boost::json::parse(body).as_object();
}

/// Whether a server was built with the test hooks, from its GET /health reply (build.test_hooks;
/// false when the reply is not /health's).
inline bool has_test_hooks(const http_reply& health) {
    boost::system::error_code ec;
    const auto v = boost::json::parse(health.body, ec);
    if (ec || !v.is_object())
        return false;
    const auto* build = v.as_object().if_contains("build");
    const auto* hooks =
        build && build->is_object() ? build->as_object().if_contains("test_hooks") : nullptr;
    return hooks && hooks->is_bool() && hooks->as_bool();
}

/// A response's `usage` without `prompt_tokens_details` (which depends on what the prefix cache
/// held), to compare two responses for the same prompt.
inline boost::json::object usage_without_cache(const boost::json::value& usage) {
    auto u = usage.as_object();
    u.erase("prompt_tokens_details");
    return u;
}

/// usage.prompt_tokens_details.cached_tokens.
inline std::int64_t cached_tokens(const boost::json::value& usage) {
    return usage.at("prompt_tokens_details").at("cached_tokens").as_int64();
}

} // namespace bitnet::test
