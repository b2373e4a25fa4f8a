// Real bitnet-server processes forming a cluster on loopback (actors/cluster/cluster_node.hpp), for
// the cluster tests: each node is started with its own flags and working directory, can be killed,
// stopped (SIGSTOP), continued and restarted with the same flags, and its HTTP and cluster ports
// are read from its log. Plus a streaming client that collects a completion's SSE events. Waits
// are bounded polls for a state (never timing assertions).
#pragma once

#include "server_process.hpp"

#include <boost/json.hpp>

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

namespace bitnet::test {

/// bitnet.cpp's own tiny file (greedy margins down to 0.003: a stream that resumes anything but
/// exactly diverges on it).
inline std::string bitnetcpp_tiny() {
    return data_path("bitnetcpp/tiny-i2_s.gguf");
}

/// Forks `args` (the program first) with stdout and stderr appended to `log`, in `workdir` when
/// it is not empty; the child's pid.
inline pid_t spawn_logged(std::vector<std::string> args, const std::string& log,
                          const std::string& workdir) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const auto fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        if (!workdir.empty() && ::chdir(workdir.c_str()) != 0)
            ::_exit(126);
        exec_or_exit(args);
    }
    return pid;
}

/// The "nodes" GET /v1/cluster on `port` lists (empty when it does not answer).
inline boost::json::array cluster_nodes_on(std::uint16_t port) {
    const auto r = http_request(port, boost::beast::http::verb::get, "/v1/cluster");
    if (r.status != 200)
        return {};
    boost::system::error_code ec;
    const auto v = boost::json::parse(r.body, ec);
    if (ec || !v.is_object() || !v.as_object().contains("nodes"))
        return {};
    return v.at("nodes").as_array();
}

/// The state ("up", "suspect", "down") the node on `port` gives `node`; "" when it does not
/// list it (or does not answer).
inline std::string state_seen(std::uint16_t port, const std::string& node) {
    for (const auto& n : cluster_nodes_on(port))
        if (n.at("name").as_string() == node)
            return std::string(n.at("state").as_string());
    return {};
}

/// One node: bitnet-server with `args` (the port flags are added: HTTP on an ephemeral port), in
/// `workdir` (relative model paths resolve there).
class cluster_node {
public:
    cluster_node(std::string name, std::vector<std::string> args, std::string workdir,
                 std::string log_path)
        : name_(std::move(name))
        , args_(std::move(args))
        , workdir_(std::move(workdir))
        , log_(std::move(log_path)) {
        start();
    }
    ~cluster_node() {
        kill_now();
        // BITNET_TEST_KEEP_LOGS=DIR keeps each node's log as DIR/NAME.log (to read a failure).
        if (const char* keep = std::getenv("BITNET_TEST_KEEP_LOGS"); keep && *keep) {
            std::error_code ec;
            std::filesystem::copy_file(log_, std::string(keep) + "/" + name_ + ".log",
                                       std::filesystem::copy_options::overwrite_existing, ec);
        }
    }
    cluster_node(const cluster_node&) = delete;
    cluster_node& operator=(const cluster_node&) = delete;

    /// Starts (or restarts, with the same flags) and waits for the HTTP listener and, with
    /// --cluster-listen, the peer listener.
    void start() {
        port_ = 0;
        cluster_port_ = 0;
        const auto log_before = log().size();
        std::vector<std::string> argv_s{
            server_binary(), "--node-name", name_,         "--port", "0", "--io-threads", "1",
            "--admin-open",  "1",           "--log-level", "debug"};
        argv_s.insert(argv_s.end(), args_.begin(), args_.end());
        pid_ = spawn_logged(std::move(argv_s), log_, workdir_);
        reaped_ = false;
        const bool wants_cluster =
            std::find(args_.begin(), args_.end(), "--cluster-listen") != args_.end();
        for (int i = 0; i < 1200 && alive(); ++i) {
            const auto text = log().substr(log_before);
            if (auto at = text.find("listening on 127.0.0.1:"); at != std::string::npos)
                port_ = static_cast<std::uint16_t>(std::stoi(text.substr(at + 23)));
            if (auto at = text.find("listens for peers at 127.0.0.1:"); at != std::string::npos)
                cluster_port_ = static_cast<std::uint16_t>(std::stoi(text.substr(at + 31)));
            if (port_ != 0 && (cluster_port_ != 0 || !wants_cluster))
                break;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        REQUIRE_MESSAGE(port_ != 0, log());
        REQUIRE_MESSAGE((cluster_port_ != 0 || !wants_cluster), log());
    }

    void kill_now() {
        if (pid_ > 0 && !reaped_) {
            ::kill(pid_, SIGCONT);
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
            reaped_ = true;
        }
    }
    void stop() { ::kill(pid_, SIGSTOP); }
    void cont() { ::kill(pid_, SIGCONT); }

    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] pid_t pid() const noexcept { return pid_; }
    [[nodiscard]] std::uint16_t cluster_port() const noexcept { return cluster_port_; }
    /// "127.0.0.1:PORT" of its peer listener, for --join.
    [[nodiscard]] std::string cluster_address() const {
        return "127.0.0.1:" + std::to_string(cluster_port_);
    }
    [[nodiscard]] std::string log() const {
        if (!std::filesystem::exists(log_))
            return {};
        auto b = read_file(log_);
        return {b.begin(), b.end()};
    }
    [[nodiscard]] bool alive() const { return !reaped_ && ::kill(pid_, 0) == 0; }

    http_reply get(const std::string& target) const {
        return http_request(port_, boost::beast::http::verb::get, target);
    }
    http_reply post(const std::string& target, const std::string& body) const {
        return http_request(port_, boost::beast::http::verb::post, target, body);
    }

    /// The state ("up", "suspect", "down") this node's GET /v1/cluster gives `node`; "" when it
    /// does not list it (or does not answer).
    [[nodiscard]] std::string sees(const std::string& node) const {
        return state_seen(port_, node);
    }

    /// The versions of `alias` GET /v1/cluster reports for `node`, as this node sees it.
    [[nodiscard]] std::string version_on(const std::string& node, const std::string& alias) const {
        for (const auto& n : cluster_nodes_on(port_))
            if (n.at("name").as_string() == node)
                for (const auto& m : n.at("models").as_array())
                    if (m.at("alias").as_string() == alias && m.at("state").as_string() == "ready")
                        return std::string(m.at("version").as_string());
        return {};
    }

    /// The stream batches this node received from `peer`'s replica for requests it placed there
    /// (bitnet_cluster_link_messages_total, direction in, kind stream): at least one per request.
    [[nodiscard]] double streamed_from(const std::string& peer) const {
        return sample(get("/metrics").body,
                      R"(bitnet_cluster_link_messages_total{direction="in",kind="stream",node=")" +
                          name_ + R"(",peer=")" + peer + R"("})");
    }

    /// bitnet_cluster_dial_failures_total{node}: the dials of this node that did not connect.
    [[nodiscard]] double dial_failures() const {
        return sample(get("/metrics").body,
                      "bitnet_cluster_dial_failures_total{node=\"" + name_ + "\"}");
    }

    /// bitnet_cluster_down_total{node,peer} on this node's /metrics: the times it saw `peer`
    /// turn down; 0 when none (or it does not answer).
    [[nodiscard]] double downs(const std::string& peer) const {
        return sample(get("/metrics").body,
                      "bitnet_cluster_down_total{node=\"" + name_ + "\",peer=\"" + peer + "\"}");
    }

    /// bitnet_cluster_refusals_total{node,reason} on this node's /metrics: the peers it refused
    /// for `reason` (proof, name_taken, tls, basp); 0 when it does not answer.
    [[nodiscard]] double refusals(const std::string& reason) const {
        return sample(get("/metrics").body, "bitnet_cluster_refusals_total{node=\"" + name_ +
                                                "\",reason=\"" + reason + "\"}");
    }

private:
    std::string name_;
    std::vector<std::string> args_;
    std::string workdir_;
    std::string log_;
    pid_t pid_ = -1;
    bool reaped_ = true;
    std::uint16_t port_ = 0;
    std::uint16_t cluster_port_ = 0;
};

/// The rolling operation `id` as node `n` lists it in GET /v1/cluster once it has ended (empty
/// when it does not end within a minute).
inline boost::json::object ended_roll(const cluster_node& n, const std::string& id) {
    boost::json::object op;
    (void)eventually(
        [&] {
            const auto r = n.get("/v1/cluster");
            if (r.status != 200)
                return false;
            const auto view = parse_object(r.body); // kept: the loop reads into it
            for (const auto& o : view.at("operations").as_array())
                if (o.as_object().at("id").as_string() == id)
                    op = o.as_object();
            return !op.empty() && op.at("state").as_string() != "running";
        },
        std::chrono::seconds(60));
    return op;
}

/// One streamed completion as the client saw it.
struct stream_transcript {
    unsigned status = 0;
    std::string text;
    std::string finish_reason;
    std::set<std::string> ids; ///< the "id" of every chunk (one stream: one id)
    std::string model;         ///< the model of the last chunk
    std::string error;         ///< an error event's code, when one came
    std::size_t chunks = 0;
    std::string raw;
    [[nodiscard]] bool ok() const { return status == 200 && error.empty() && ids.size() == 1; }
};

/// POST /v1/completions with "stream": true and reads every event to the end.
inline stream_transcript stream_completion(std::uint16_t port, const std::string& body) {
    stream_transcript t;
    const auto r = http_request(port, boost::beast::http::verb::post, "/v1/completions", body, {},
                                {}, long_exchange);
    t.status = r.status;
    t.raw = r.body;
    std::size_t at = 0;
    while ((at = r.body.find("data: ", at)) != std::string::npos) {
        const auto end = r.body.find("\n\n", at);
        const auto payload = r.body.substr(at + 6, end == std::string::npos ? end : end - at - 6);
        at = end == std::string::npos ? r.body.size() : end;
        if (payload == "[DONE]")
            break;
        boost::system::error_code ec;
        const auto v = boost::json::parse(payload, ec);
        if (ec || !v.is_object())
            continue;
        const auto& o = v.as_object();
        if (const auto* e = o.if_contains("error")) {
            t.error = e->is_object() && e->as_object().contains("code")
                          ? boost::json::serialize(e->as_object().at("code"))
                          : "error";
            continue;
        }
        ++t.chunks;
        t.ids.insert(std::string(o.at("id").as_string()));
        t.model = std::string(o.at("model").as_string());
        const auto& c = o.at("choices").as_array().at(0).as_object();
        t.text += std::string(c.at("text").as_string());
        if (!c.at("finish_reason").is_null())
            t.finish_reason = std::string(c.at("finish_reason").as_string());
    }
    return t;
}

/// The completion request body of stream `i` of a test: a prompt of its own, greedy unless a
/// temperature and seed are given.
inline std::string stream_body(int i, unsigned max_tokens, double temperature = 0.0,
                               int seed = -1) {
    std::string b = R"({"prompt":"Once upon a time )" + std::to_string(i) +
                    R"(","stream":true,"max_tokens":)" + std::to_string(max_tokens) +
                    R"(,"temperature":)" + std::to_string(temperature);
    if (seed >= 0)
        b += R"(,"seed":)" + std::to_string(seed);
    return b + "}";
}

/// Runs `n` streams of `body_of(i)` at once against `port`; returns their transcripts in order.
inline std::vector<stream_transcript> run_streams(std::uint16_t port, int n,
                                                  const std::function<std::string(int)>& body_of) {
    std::vector<stream_transcript> out(static_cast<std::size_t>(n));
    std::vector<std::thread> ts;
    for (int i = 0; i < n; ++i)
        ts.emplace_back(
            [&, i] { out[static_cast<std::size_t>(i)] = stream_completion(port, body_of(i)); });
    for (auto& t : ts)
        t.join();
    return out;
}

/// A counter of GET /v1/stats summed over the node's models; -1 when it does not answer.
inline long stat_on(const cluster_node& n, const char* field) {
    const auto r = n.get("/v1/stats");
    if (r.status != 200)
        return -1;
    long sum = 0;
    const auto v = boost::json::parse(r.body);
    for (const auto& m : v.at("models").as_array())
        sum += static_cast<long>(m.at(field).to_number<double>());
    return sum;
}

/// Running requests of a node (GET /v1/stats), -1 when it does not answer.
inline long running_on(const cluster_node& n) {
    const auto r = n.get("/v1/stats");
    if (r.status != 200)
        return -1;
    boost::system::error_code ec;
    const auto v = boost::json::parse(r.body, ec);
    if (ec || !v.is_object())
        return -1;
    long running = 0;
    for (const auto& m : v.at("models").as_array())
        running += static_cast<long>(m.at("running").to_number<double>());
    return running;
}

} // namespace bitnet::test
