// Rolling model operations across a cluster of real bitnet-server processes on loopback
// (actors/cluster/cluster_rolls.cpp): POST /v1/models/load on any node swaps the alias node after
// node under live traffic, a failure on a later node rolls the earlier ones back, nodes that would
// serve different bytes under one version are refused, and "nodes" restricts the roll. Each node
// loads its own working directory's relative path, as nodes on different machines would.
#include "server/cluster_process.hpp"

#include <array>
#include <memory>
#include <mutex>
#include <optional>

using namespace bitnet;
using namespace bitnet::test;

namespace {

/// Prompts whose greedy continuations the old and the new file must tell apart.
const std::array<std::string, 4> prompts{"Once upon", "The cat", "Hello world", "A B C D"};

/// A native inference request (POST /v1/inference or /v1/inference/stream): greedy, short.
std::string inference_body(const std::string& prompt) {
    return R"({"model":"tiny","prompt":)" + boost::json::serialize(boost::json::value(prompt)) +
           R"(,"max_tokens":8,"temperature":0})";
}

/// One native request as the client saw it: the version it ran on and its tokens.
struct native_result {
    unsigned status = 0;
    std::string version; ///< model_version of the reply (or of the stream's done event)
    std::string tokens;  ///< the token ids, as a JSON array
    std::string error;   ///< an error event's body, when one came
    std::size_t prompt = 0;
    [[nodiscard]] bool ok() const { return status == 200 && error.empty() && !version.empty(); }
};

/// A streamed native request read to its end (token events, then done with model_version).
native_result native_stream(std::uint16_t port, std::size_t prompt) {
    native_result out;
    out.prompt = prompt;
    const auto r = http_request(port, boost::beast::http::verb::post, "/v1/inference/stream",
                                inference_body(prompts[prompt]));
    out.status = r.status;
    boost::json::array ids;
    for (const auto& [event, data] : sse_events(r.body)) {
        boost::system::error_code ec;
        const auto v = boost::json::parse(data, ec);
        if (event == "error" || ec || !v.is_object()) {
            out.error = event + ": " + data;
            continue;
        }
        const auto& o = v.as_object();
        if (event == "token" && !o.at("token_id").is_null())
            ids.push_back(o.at("token_id"));
        if (event == "done")
            out.version = std::string(o.at("model_version").as_string());
    }
    if (out.version.empty() && out.error.empty())
        out.error = "no done event: " + r.body.substr(0, 300);
    out.tokens = boost::json::serialize(ids);
    return out;
}

/// A plain native request: the greedy reference of a prompt and the version that computed it.
native_result native_plain(const cluster_node& n, std::size_t prompt) {
    native_result out;
    out.prompt = prompt;
    const auto r = n.post("/v1/inference", inference_body(prompts[prompt]));
    out.status = r.status;
    if (r.status != 200) {
        out.error = r.body;
        return out;
    }
    const auto o = parse_object(r.body);
    out.version = std::string(o.at("model_version").as_string());
    out.tokens = boost::json::serialize(o.at("tokens"));
    return out;
}

/// Every prompt's greedy tokens through `n`, all from one version (returned in `version`);
/// nothing when a request fails or two prompts ran on different versions.
std::optional<std::array<std::string, 4>> try_references(const cluster_node& n,
                                                         std::string& version) {
    std::array<std::string, 4> out;
    version.clear();
    for (std::size_t p = 0; p < prompts.size(); ++p) {
        const auto r = native_plain(n, p);
        if (!r.ok() || (!version.empty() && r.version != version))
            return std::nullopt;
        version = r.version;
        out[p] = r.tokens;
    }
    return out;
}

std::array<std::string, 4> references(const cluster_node& n, std::string& version) {
    auto refs = try_references(n, version);
    REQUIRE_MESSAGE(refs.has_value(), "no consistent references through " << n.name());
    return *refs;
}

/// Polls until every prompt through `n` runs on version `v`: the tokens then. A remote replica
/// is known from its node's last heartbeat, so a node may route to a replaced version for up to
/// a heartbeat after the swap.
std::array<std::string, 4> references_on(const cluster_node& n, const std::string& v) {
    std::optional<std::array<std::string, 4>> refs;
    std::string got;
    const bool settled = eventually([&] {
        refs = try_references(n, got);
        return refs && got == v;
    });
    REQUIRE_MESSAGE(settled, "requests through " << n.name() << " do not all run on version " << v
                                                 << " (last: " << got << ")");
    return *refs;
}

/// The rolling operation `id` as `n`'s GET /v1/cluster lists it (empty when it does not).
boost::json::object operation(const cluster_node& n, const std::string& id) {
    const auto r = n.get("/v1/cluster");
    if (r.status != 200)
        return {};
    const auto view = parse_object(r.body); // kept: the loop below reads into it
    for (const auto& op : view.at("operations").as_array())
        if (op.as_object().at("id").as_string() == id)
            return op.as_object();
    return {};
}

/// Polls until roll `id` has left "running"; the ended operation.
boost::json::object wait_roll(const cluster_node& n, const std::string& id) {
    boost::json::object op;
    const bool ended = eventually(
        [&] {
            op = operation(n, id);
            return !op.empty() && op.at("state").as_string() != "running";
        },
        std::chrono::seconds(60));
    REQUIRE_MESSAGE(ended, "roll " << id << " did not end; last seen: "
                                   << boost::json::serialize(op) << "\nlog:\n"
                                   << n.log());
    return op;
}

/// The failure message of an ended roll ("" when it has none).
std::string failure_of(const boost::json::object& op) {
    const auto* f = op.if_contains("failure");
    return f && f->is_string() ? std::string(f->get_string()) : std::string{};
}

/// POST /v1/models/load on `n`: the roll's id (the order must be accepted).
std::string start_load(const cluster_node& n, const std::string& path,
                       const std::string& extra = {}) {
    const auto r =
        n.post("/v1/models/load", R"({"alias":"tiny","path":")" + path + "\"" + extra + "}");
    REQUIRE_MESSAGE(r.status == 202, r.body);
    const auto t = parse_object(r.body);
    return std::string(t.at("operation_id").as_string());
}

/// Nodes a and b, each serving alias "tiny" from its working directory's models/tiny.gguf (the
/// same bytes: made with seed 1), and optionally a router r without a model; every node joins a.
/// Each working directory also gets models/new.gguf (seed 2) unless a test replaces it.
class roll_cluster {
    // First, so it goes last: the nodes stop (and BITNET_TEST_KEEP_LOGS copies their logs) while
    // their directories still exist.
    scratch_dir dir_;

public:
    explicit roll_cluster(bool with_router) {
        const auto v1 = make("v1.gguf", 1), v2 = make("v2.gguf", 2);
        for (const char* n : {"a", "b", "r"}) {
            std::filesystem::create_directories(dir_.file(std::string(n) + "/models"));
            if (std::string(n) != "r") {
                std::filesystem::copy_file(v1, model_path(n, "tiny.gguf"));
                std::filesystem::copy_file(v2, model_path(n, "new.gguf"));
            }
        }
        a = start("a", true, {});
        b = start("b", true, a->cluster_address());
        if (with_router)
            r = start("r", false, a->cluster_address());
        const bool formed = eventually([&] {
            for (const auto* n : {a.get(), b.get(), r.get()}) {
                if (!n)
                    continue;
                for (const char* peer : {"a", "b"})
                    if (n->sees(peer) != "up" || n->version_on(peer, "tiny").empty())
                        return false;
                if (r && n->sees("r") != "up")
                    return false;
            }
            return true;
        });
        REQUIRE_MESSAGE(formed, "the cluster did not form; a's log:\n" << a->log());
        old_version = a->version_on("a", "tiny");
        REQUIRE(a->version_on("b", "tiny") == old_version);
    }

    /// A tiny model made with `seed`, outside every node's directory.
    std::string make(const std::string& name, int seed) {
        const auto path = dir_.file(name);
        const auto made = run_tool("bitnet-model", "make --shape tiny --seed " +
                                                       std::to_string(seed) + " -o " + path);
        REQUIRE_MESSAGE(made.exit_code == 0, made.err);
        return path;
    }
    /// NODE's models/FILE.
    std::string model_path(const std::string& node, const std::string& file) const {
        return dir_.file(node + "/models/" + file);
    }

    /// Polls until `n` reports version `v` of "tiny" ready on both replicas.
    bool both_on(const cluster_node& n, const std::string& v) const {
        return eventually(
            [&] { return n.version_on("a", "tiny") == v && n.version_on("b", "tiny") == v; });
    }

    /// The tail of each node's log, for a failed roll's message (a node that crashed, say
    /// under a sanitizer, says so only there).
    std::string logs() const {
        std::string out;
        for (const auto* n : {a.get(), b.get(), r.get()})
            if (n) {
                const auto text = n->log();
                out += "--- " + n->name() + "'s log (tail):\n" +
                       text.substr(text.size() > 6000 ? text.size() - 6000 : 0) + "\n";
            }
        return out;
    }

    std::unique_ptr<cluster_node> a, b, r;
    std::string old_version;

private:
    std::unique_ptr<cluster_node> start(const std::string& name, bool model,
                                        const std::string& join) {
        // A generous failure timeout: these tests are about rolls, and 16 clients on two cores
        // must not make a node suspect (a roll refuses suspect nodes).
        std::vector<std::string> args{"--cluster-listen",
                                      "127.0.0.1:0",
                                      "--cluster-insecure",
                                      "--cluster-insecure-acknowledged",
                                      "--cluster-failure-timeout-ms",
                                      "20000",
                                      "--threads",
                                      "1"};
        if (model)
            args.insert(args.end(), {"--model", "models/tiny.gguf"});
        if (!join.empty())
            args.insert(args.end(), {"--join", join});
        return std::make_unique<cluster_node>(name, args, dir_.file(name),
                                              dir_.file(name + ".log"));
    }
};

/// How the requests of a roll ran: wholly on the old version, wholly on the new, failed, or
/// mixed (a version's name with another version's tokens).
struct roll_tally {
    std::size_t on_old = 0, on_new = 0, failed = 0, mixed = 0;
};

roll_tally tally(const std::vector<native_result>& results, const std::string& v_old,
                 const std::array<std::string, 4>& ref_old, const std::string& v_new,
                 const std::array<std::string, 4>& ref_new) {
    roll_tally t;
    for (const auto& res : results) {
        if (!res.ok()) {
            if (t.failed++ < 3)
                MESSAGE("failed: status " << res.status << " " << res.error);
            continue;
        }
        const bool old_run = res.version == v_old && res.tokens == ref_old[res.prompt];
        const bool new_run = res.version == v_new && res.tokens == ref_new[res.prompt];
        t.on_old += old_run;
        t.on_new += new_run;
        if (!old_run && !new_run && t.mixed++ < 3)
            MESSAGE("version " << res.version << " tokens " << res.tokens << " (old "
                               << ref_old[res.prompt] << ", new " << ref_new[res.prompt] << ")");
    }
    return t;
}

} // namespace

TEST_CASE(
    "cluster roll: a load through a router swaps both replicas under 16 streaming clients without "
    "a failed request, each request on one version") {
    roll_cluster c(true);
    // r has no replica of its own: it routes once its admission has the replicas from the
    // cluster actor (at its next tick after the reports that listed them).
    const std::string v_old = c.old_version;
    const auto ref_old = references_on(*c.r, v_old);

    constexpr int clients = 16;
    std::atomic<bool> stop{false};
    std::array<std::atomic<int>, clients> finished{};
    std::mutex mu;
    std::vector<native_result> results;
    std::vector<std::size_t> client_of; ///< which client sent results[j]
    std::vector<std::thread> ts;
    for (int i = 0; i < clients; ++i)
        ts.emplace_back([&, i] {
            for (std::size_t k = 0; !stop; ++k) {
                auto res = native_stream(c.r->port(), (static_cast<std::size_t>(i) + k) % 4);
                {
                    std::lock_guard lock(mu);
                    results.push_back(std::move(res));
                    client_of.push_back(static_cast<std::size_t>(i));
                }
                ++finished[static_cast<std::size_t>(i)];
            }
        });
    auto all_past = [&](const std::array<int, clients>& marks) {
        return eventually(
            [&] {
                for (int i = 0; i < clients; ++i)
                    if (finished[static_cast<std::size_t>(i)] < marks[static_cast<std::size_t>(i)])
                        return false;
                return true;
            },
            std::chrono::seconds(60));
    };
    std::array<int, clients> marks{};
    marks.fill(2);
    // Every client is in its loop before the roll starts, and stays in it until after the end.
    const bool warmed = all_past(marks);

    std::string roll_id;
    boost::json::object op;
    if (warmed) {
        roll_id = start_load(*c.r, "models/new.gguf");
        op = wait_roll(*c.r, roll_id);
        // The router learns the new replicas from the next heartbeats: until then its requests
        // may still go to the old versions, which serve them while they drain.
        // So the clients go on until each has had two replies from the new version: counting
        // two more replies of any version would count one that was in flight across the roll.
        if (op.at("state").as_string() == "done") {
            const std::string v(op.at("version").as_string());
            (void)c.both_on(*c.r, v);
            CHECK(eventually(
                [&] {
                    std::array<int, clients> on_new_by_client{};
                    std::lock_guard lock(mu);
                    for (std::size_t j = 0; j < results.size(); ++j)
                        if (results[j].version == v)
                            ++on_new_by_client[client_of[j]];
                    for (const int n : on_new_by_client)
                        if (n < 2)
                            return false;
                    return true;
                },
                std::chrono::seconds(60)));
        }
    }
    stop = true;
    for (auto& t : ts)
        t.join();
    REQUIRE_MESSAGE(warmed, "the clients did not get going; r's log:\n" << c.r->log());

    INFO("roll: " << boost::json::serialize(op));
    CHECK(op.at("kind").as_string() == "load");
    REQUIRE_MESSAGE(op.at("state").as_string() == "done", c.logs());
    CHECK(boost::json::serialize(op.at("nodes")) == R"(["a","b"])");
    CHECK(boost::json::serialize(op.at("done")) == R"(["a","b"])");
    const std::string v_new(op.at("version").as_string());
    REQUIRE(!v_new.empty());
    CHECK(v_new != c.old_version);
    CHECK(c.both_on(*c.r, v_new));
    CHECK(c.both_on(*c.a, v_new));

    const auto ref_new = references_on(*c.r, v_new);
    // The versions compute different tokens, or "one version per request" would prove nothing.
    for (std::size_t p = 0; p < prompts.size(); ++p)
        REQUIRE_MESSAGE(ref_old[p] != ref_new[p], "prompt " << p << ": " << ref_old[p]);

    const auto t = tally(results, v_old, ref_old, v_new, ref_new);
    MESSAGE(results.size() << " requests: " << t.on_old << " on the old version, " << t.on_new
                           << " on the new");
    CHECK(t.failed == 0);
    CHECK(t.mixed == 0);
    CHECK(t.on_old >= 2 * clients);
    CHECK(t.on_new >= 2 * clients);
}

TEST_CASE(
    "cluster roll: a load that fails on the second node rolls the first back: both serve the old "
    "version") {
    roll_cluster c(false);
    std::string v_old;
    const auto ref_old = references(*c.a, v_old);
    // Node b's new file is cut short: its validation fails after node a has swapped.
    auto bytes = read_file(c.model_path("b", "new.gguf"));
    bytes.resize(bytes.size() / 2);
    write_file(c.model_path("b", "new.gguf"), bytes);

    const auto op = wait_roll(*c.a, start_load(*c.a, "models/new.gguf"));
    INFO("roll: " << boost::json::serialize(op));
    CHECK(op.at("state").as_string() == "failed");
    CHECK(failure_of(op).find("node 'b'") != std::string::npos);
    CHECK(boost::json::serialize(op.at("done")) == R"(["a"])");
    CHECK_MESSAGE(c.both_on(*c.a, v_old), c.a->log());
    CHECK(c.both_on(*c.b, v_old));
    for (const auto* n : {c.a.get(), c.b.get()})
        CHECK_MESSAGE(references_on(*n, v_old) == ref_old, n->name());
}

TEST_CASE(
    "cluster roll: a load refuses different bytes under one path on two nodes: both keep the old "
    "version") {
    roll_cluster c(false);
    std::string v_old;
    const auto ref_old = references(*c.a, v_old);
    // A valid model, but not the bytes node a loads.
    const auto other = c.make("v3.gguf", 3);
    std::filesystem::copy_file(other, c.model_path("b", "new.gguf"),
                               std::filesystem::copy_options::overwrite_existing);

    const auto op = wait_roll(*c.a, start_load(*c.a, "models/new.gguf"));
    INFO("roll: " << boost::json::serialize(op));
    CHECK(op.at("state").as_string() == "failed");
    const auto failure = failure_of(op);
    CHECK(failure.find("node 'b'") != std::string::npos);
    CHECK(failure.find("SHA-256") != std::string::npos);
    CHECK_MESSAGE(c.both_on(*c.a, c.old_version), c.a->log());
    CHECK(c.both_on(*c.b, c.old_version));
    for (const auto* n : {c.a.get(), c.b.get()})
        CHECK_MESSAGE(references_on(*n, c.old_version) == ref_old, n->name());
}

TEST_CASE("cluster roll: \"nodes\" restricts a rolling load to the named nodes") {
    roll_cluster c(false);
    const auto op = wait_roll(*c.b, start_load(*c.b, "models/new.gguf", R"(,"nodes":["a"])"));
    INFO("roll: " << boost::json::serialize(op));
    CHECK(op.at("kind").as_string() == "load");
    REQUIRE_MESSAGE(op.at("state").as_string() == "done", c.logs());
    CHECK(boost::json::serialize(op.at("nodes")) == R"(["a"])");
    const std::string v_new(op.at("version").as_string());
    REQUIRE(!v_new.empty());
    CHECK(v_new != c.old_version);
    CHECK(eventually([&] {
        return c.b->version_on("a", "tiny") == v_new &&
               c.b->version_on("b", "tiny") == c.old_version;
    }));
    // b was never asked: its own view agrees, and its model has no other version, not even a
    // failed one (a load it had tried would be listed).
    CHECK(c.a->version_on("b", "tiny") == c.old_version);
    const auto versions = parse_object(c.b->get("/v1/models/tiny").body).at("versions").as_array();
    CHECK_MESSAGE(versions.size() == 1, boost::json::serialize(versions));
}

TEST_CASE("cluster roll: rollback and unload roll across the nodes like a load") {
    roll_cluster c(false);
    const auto loaded = wait_roll(*c.a, start_load(*c.a, "models/new.gguf"));
    REQUIRE_MESSAGE(loaded.at("state").as_string() == "done", c.logs());
    const std::string v_new(loaded.at("version").as_string());
    REQUIRE(c.both_on(*c.a, v_new));
    // Rollback on b (any node): both nodes go back to the old version.
    const auto rb = c.b->post("/v1/models/tiny/rollback", "");
    REQUIRE_MESSAGE(rb.status == 202, rb.body);
    const auto rolled =
        wait_roll(*c.b, std::string(parse_object(rb.body).at("operation_id").as_string()));
    INFO("rollback: " << boost::json::serialize(rolled));
    CHECK(rolled.at("kind").as_string() == "rollback");
    REQUIRE_MESSAGE(rolled.at("state").as_string() == "done", c.logs());
    CHECK(boost::json::serialize(rolled.at("done")) == R"(["a","b"])");
    CHECK(c.both_on(*c.b, c.old_version));
    // Unload on a: the alias leaves both nodes.
    const auto un = http_request(c.a->port(), boost::beast::http::verb::delete_, "/v1/models/tiny");
    REQUIRE_MESSAGE(un.status == 202, un.body);
    const auto gone =
        wait_roll(*c.a, std::string(parse_object(un.body).at("operation_id").as_string()));
    INFO("unload: " << boost::json::serialize(gone));
    CHECK(gone.at("kind").as_string() == "unload");
    REQUIRE_MESSAGE(gone.at("state").as_string() == "done", c.logs());
    CHECK(eventually([&] {
        return c.a->version_on("a", "tiny").empty() && c.a->version_on("b", "tiny").empty();
    }));
    CHECK(c.b->post("/v1/completions", R"({"model":"tiny","prompt":"hi","max_tokens":2})").status !=
          200);
}
