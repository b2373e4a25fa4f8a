// Model management over HTTP for the server tests: load orders, bounded waits for an operation's
// end, and greedy generations to compare versions by their outputs.
#pragma once

#include "server/server_process.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

namespace bitnet::test {

inline std::string make_model(const scratch_dir& dir, const std::string& name,
                              const std::string& extra, const std::string& shape = "tiny") {
    const auto path = dir.file(name);
    auto made = run_tool("bitnet-model", "make --shape " + shape + " -o " + path + " " + extra);
    REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    return path;
}

inline std::string load_body(const std::string& alias, const std::string& path,
                             const std::string& extra = {}) {
    return R"({"alias":")" + alias + R"(","path":)" +
           boost::json::serialize(boost::json::value(path)) + extra + "}";
}

/// Polls GET /v1/models/{alias} until operation `op_id` has ended; returns that operation.
inline boost::json::object wait_op(const server_process& s, const std::string& alias,
                                   const std::string& op_id) {
    for (int i = 0; i < 3000; ++i) {
        auto r = s.get("/v1/models/" + alias);
        if (r.status == 200) {
            auto o = parse_object(r.body);
            for (const auto& op : o.at("operations").as_array())
                if (op.as_object().at("id").as_string() == op_id &&
                    !op.as_object().at("finished_ms").is_null())
                    return op.as_object();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL("operation " << op_id << " did not end; log:\n" << s.log());
    return {};
}

/// POST /v1/models/load and wait for its end: the ended operation.
inline boost::json::object load_and_wait(const server_process& s, const std::string& alias,
                                         const std::string& path, const std::string& extra = {}) {
    auto r = s.post("/v1/models/load", load_body(alias, path, extra));
    REQUIRE_MESSAGE(r.status == 202, r.body);
    const auto t = parse_object(r.body);
    CHECK(t.at("alias").as_string() == alias);
    return wait_op(s, alias, std::string(t.at("operation_id").as_string()));
}

/// A file whose load stays in its hashing stage for hours: the server's own model's GGUF header,
/// then a sparse terabyte (no disk used). Its path, under `dir`.
inline std::string endless_load_file(const scratch_dir& dir, const server_process& s) {
    const auto huge = dir.file("huge.gguf");
    write_file(huge, read_file(s.model_path()));
    std::filesystem::resize_file(huge, std::uintmax_t{1} << 40);
    return huge;
}

inline boost::json::object model(const server_process& s, const std::string& alias) {
    auto r = s.get("/v1/models/" + alias);
    REQUIRE_MESSAGE(r.status == 200, r.body);
    return parse_object(r.body);
}

inline std::string greedy(const std::string& alias, const std::string& prompt, int n) {
    return R"({"model":")" + alias + R"(","prompt":)" +
           boost::json::serialize(boost::json::value(prompt)) + R"(,"max_tokens":)" +
           std::to_string(n) + R"(,"temperature":0})";
}

/// launch_options whose "ready" is a start-up load that failed: for a server whose model never
/// serves, so that the test reads why.
inline launch_options ready_once_load_failed(launch_options lo = {}) {
    lo.ready_status = [](std::uint16_t port) -> unsigned {
        const auto r = http_request(port, boost::beast::http::verb::get, "/health");
        return r.body.find(R"("state":"failed")") != std::string::npos ? 200 : 0;
    };
    return lo;
}

/// The greedy tokens and the version they came from.
inline std::pair<std::string, std::string>
generate(const server_process& s, const std::string& alias, const std::string& prompt) {
    auto r = s.post("/v1/inference", greedy(alias, prompt, 12));
    REQUIRE_MESSAGE(r.status == 200, r.body);
    auto o = parse_object(r.body);
    return {boost::json::serialize(o.at("tokens")), std::string(o.at("model_version").as_string())};
}

/// A server (no keys) with the shipped default model loaded as "fortunes": the API families'
/// tests run the trained model, whose greedy text and tool calls are stable.
struct default_model {
    server_process s;
    default_model() {
        const auto path = data_path("../../models/bitnet-fortunes-5m-i2_s.gguf");
        REQUIRE(load_and_wait(s, "fortunes", path).at("state").as_string() == "ready");
    }
};

/// bitnet_model_swaps_total{result=RESULT} on the server's /metrics.
inline std::uint64_t swaps(const server_process& s, const std::string& result) {
    const auto m = s.get("/metrics").body;
    const std::string key = R"(bitnet_model_swaps_total{result=")" + result + R"("} )";
    const auto at = m.find(key);
    REQUIRE(at != std::string::npos);
    return std::stoull(m.substr(at + key.size()));
}

/// Threads of a process (/proc/PID/task).
inline std::size_t n_threads(pid_t pid) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task"))
        ++n;
    return n;
}

} // namespace bitnet::test
