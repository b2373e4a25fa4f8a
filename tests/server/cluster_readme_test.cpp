// The README's three-command cluster ("Scaling out") works as written: the lines of the block
// after its `cluster-example` marker are run from the repository root (only the executable's path
// is this build's), the router lists both replicas up, serves a completion through them, and
// still serves one after a replica is killed.
#include "cluster_process.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <cctype>
#include <cstring>
#include <map>
#include <sstream>

namespace bitnet::test {

namespace {

std::string repo_root() {
    return std::filesystem::canonical(std::filesystem::path(BITNET_TEST_DATA_DIR) / ".." / "..")
        .string();
}

/// The command lines of the README's cluster example.
std::vector<std::string> readme_cluster_commands() {
    const auto bytes = read_file(repo_root() + "/README.md");
    const std::string text(bytes.begin(), bytes.end());
    const auto marker = text.find("<!-- cluster-example");
    REQUIRE(marker != std::string::npos);
    const auto open = text.find("```sh\n", marker);
    const auto close = text.find("```", open + 6);
    REQUIRE((open != std::string::npos && close != std::string::npos));
    std::vector<std::string> lines;
    std::istringstream in(text.substr(open + 6, close - open - 6));
    for (std::string line; std::getline(in, line);)
        if (!line.empty())
            lines.push_back(line);
    return lines;
}

/// A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it).
std::uint16_t free_port() {
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::acceptor a(
        ioc, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    return a.local_endpoint().port();
}

/// The README's lines with each port they name (`--port N`, `127.0.0.1:N`) moved to a free one,
/// the same README port to the same free port: the example's fixed ports (8080, 7070...) may be
/// taken on a machine running other tests. Returns the new port of README port `wanted` too.
std::vector<std::string> on_free_ports(std::vector<std::string> lines, std::uint16_t wanted,
                                       std::uint16_t& mapped) {
    std::map<std::string, std::string> ports;
    auto port_at = [](const std::string& l, std::size_t at) {
        std::size_t end = at;
        while (end < l.size() && std::isdigit(static_cast<unsigned char>(l[end])))
            ++end;
        return end;
    };
    for (auto& l : lines) {
        std::string out;
        for (std::size_t i = 0; i < l.size();) {
            std::size_t at = std::string::npos;
            for (const char* lead : {"--port ", "127.0.0.1:"})
                if (l.compare(i, std::strlen(lead), lead) == 0)
                    at = i + std::strlen(lead);
            if (at == std::string::npos) {
                out += l[i++];
                continue;
            }
            const auto end = port_at(l, at);
            const auto old = l.substr(at, end - at);
            if (!ports.count(old))
                ports[old] = std::to_string(free_port());
            out += l.substr(i, at - i) + ports[old];
            i = end;
        }
        l = out;
    }
    mapped = static_cast<std::uint16_t>(std::stoi(ports.at(std::to_string(wanted))));
    return lines;
}

/// Runs one README line (`PROGRAM ARGS... &`) from the repository root, output to `log`.
pid_t run_line(std::string line, const std::string& log) {
    const std::string exe = "build/release/tools/bitnet-server";
    REQUIRE(line.rfind(exe, 0) == 0);
    line = server_binary() + line.substr(exe.size());
    if (line.size() > 2 && line.substr(line.size() - 2) == " &")
        line.resize(line.size() - 2);
    std::vector<std::string> args;
    std::istringstream in(line);
    for (std::string a; in >> a;)
        args.push_back(a);
    return spawn_logged(std::move(args), log, repo_root());
}

/// The HTTP port a README line's node serves on (its `--port N`).
std::uint16_t http_port_of(const std::string& line) {
    const auto at = line.find("--port ");
    REQUIRE(at != std::string::npos);
    return static_cast<std::uint16_t>(std::stoi(line.substr(at + 7)));
}

/// Whether a node of `pids` exited because another process took its port between free_port()
/// and the node's bind (a parallel test's ephemeral port): then the example is started again on
/// other ports. Waits until every node answers GET /health/live (a node binds its peer port
/// before it serves HTTP, and exits when a bind fails), or one exits.
bool lost_port_race(std::vector<pid_t>& pids, const std::vector<std::string>& lines,
                    const std::vector<std::string>& logs) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
        bool all_live = true;
        for (std::size_t i = 0; i < pids.size(); ++i) {
            if (pids[i] > 0 && ::waitpid(pids[i], nullptr, WNOHANG) == pids[i]) {
                pids[i] = 0; // reaped: never signalled again
                const auto b = read_file(logs[i]);
                return std::string(b.begin(), b.end()).find("Address already in use") !=
                       std::string::npos;
            }
            all_live = all_live && http_request(http_port_of(lines[i]),
                                                boost::beast::http::verb::get, "/health/live")
                                           .status == 200;
        }
        if (all_live)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

} // namespace

TEST_CASE("cluster: the README's three commands start a cluster that serves through its router") {
    std::uint16_t router = 0;
    std::vector<std::string> lines;
    scratch_dir dir;
    std::vector<pid_t> pids;
    struct reaper {
        std::vector<pid_t>& p;
        void now() {
            for (auto& pid : p)
                if (pid > 0) {
                    ::kill(pid, SIGKILL);
                    ::waitpid(pid, nullptr, 0);
                    pid = 0;
                }
        }
        ~reaper() { now(); }
    } reap{pids};
    std::vector<std::string> log_files;
    for (int attempt = 0; attempt < 4; ++attempt) {
        reap.now();
        pids.clear();
        log_files.clear();
        lines = on_free_ports(readme_cluster_commands(), 8080, router);
        REQUIRE(lines.size() == 3);
        for (std::size_t i = 0; i < lines.size(); ++i) {
            log_files.push_back(
                dir.file("node" + std::to_string(i) + "-" + std::to_string(attempt) + ".log"));
            pids.push_back(run_line(lines[i], log_files.back()));
        }
        if (!lost_port_race(pids, lines, log_files))
            break;
    }
    auto logs = [&] {
        std::string all;
        for (const auto& f : log_files) {
            const auto b = read_file(f);
            all += std::string(b.begin(), b.end());
        }
        return all;
    };
    for (auto pid : pids)
        REQUIRE_MESSAGE(pid > 0, "a node of the example exited at start:\n" << logs());
    // Both replicas serve the model as the router sees them (a node is up before its model is
    // loaded: on a busy machine b's load may still run when a is killed below).
    const auto serves = [&](const std::string& node) {
        for (const auto& n : cluster_nodes_on(router))
            if (n.at("name").as_string() == node)
                for (const auto& m : n.at("models").as_array())
                    if (m.at("state").as_string() == "ready")
                        return true;
        return false;
    };
    REQUIRE_MESSAGE(
        eventually([&] {
            return state_seen(router, "a") == "up" && state_seen(router, "b") == "up" &&
                   serves("a") && serves("b") &&
                   http_request(router, boost::beast::http::verb::get, "/health/ready").status ==
                       200;
        }),
        logs());
    // The router's admission takes the replicas it routes to from the cluster actor at its next
    // tick (cluster_heartbeat_ms, 250 by default) after the report that listed them.
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    const std::string body = R"({"prompt":"Never trust a","max_tokens":16,"temperature":0})";
    const auto first =
        http_request(router, boost::beast::http::verb::post, "/v1/completions", body);
    CHECK_MESSAGE(first.status == 200, first.body);
    // A replica dies: the router still answers, from the other one.
    ::kill(pids[0], SIGKILL);
    REQUIRE(eventually([&] { return state_seen(router, "a") == "down"; }));
    const auto second =
        http_request(router, boost::beast::http::verb::post, "/v1/completions", body);
    CHECK_MESSAGE(second.status == 200, second.body);
    // The same model and greedy: the same text from either replica.
    const auto text = [](const std::string& b) {
        return std::string(
            boost::json::parse(b).at("choices").as_array().at(0).at("text").as_string());
    };
    if (first.status == 200 && second.status == 200)
        CHECK(text(first.body) == text(second.body));
}

} // namespace bitnet::test
