// How a cluster's membership state, routing state and messages grow with the node count N, the
// models per node k and the streams per step s (README, "Scaling out"). Sizes are measured, not
// guessed: the real message types (messages/cluster.hpp) serialized with CAF's binary serializer
// as the per-link counters count them (actors/cluster/wire_size.hpp), a replica's executor_info
// asked of a real executor on --model (its engine description and kernel timings ride in every
// heartbeat). The rates then follow from the protocol (actors/cluster/cluster_node.hpp: a full
// mesh, every node sends its report to every peer each heartbeat interval;
// actors/cluster/stream_relay.hpp: one stream_batch per step per requesting node). --frame-bytes
// adds what BASP puts around each message on the wire (bench/cluster_bench.mjs measures it: the
// router's TCP bytes against its serialized bytes).
//
//   cluster_scaling --model 2b4t.gguf [--interval-ms 250] [--models 1,4] [--streams 1,8,32]
//                   [--nodes 2,4,8,16,32,64] [--frame-bytes 0] [--node-tps 45]
//
// --node-tps: generated tokens/s of one node (measured by cluster_bench), to price heartbeats per
// generated token.
#include "actors/admission/admission.hpp"
#include "actors/cluster/wire_size.hpp"
#include "actors/executor/executor.hpp"
#include "messages/errors.hpp"
#include "messages/type_ids.hpp"

#include <CLI/CLI.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace bitnet;

namespace {

struct config : caf::actor_system_config {
    config() {
        msg::register_messages(*this);
        set("scheduler.max-threads", 2);
    }
};

std::string node_name(int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "node-%02d", i);
    return buf;
}

/// The report node 0 of an `n`-node cluster sends with `k` models, each with one replica (what
/// cluster_node.cpp's own_report fills), every actor handle a real (local) actor.
msg::node_report report(int n, int k, const msg::executor_info& info, const caf::actor& handle) {
    msg::node_report r;
    r.name = node_name(0);
    r.address = "10.0.0.1:7070";
    r.incarnation = 1732000000123;
    for (int m = 0; m < k; ++m) {
        msg::replica_view v;
        v.node = r.name;
        v.alias = "model-" + std::to_string(m);
        v.version = "0123456789ab"; // a version id: the file's SHA-256, 12 hex digits
        v.batcher = handle;
        v.text = handle;
        v.info = actors::routing_info(info); // what admission puts in a replica view
        v.outstanding_tokens = 1234;
        v.running = 16;
        v.waiting = 2;
        r.replicas.push_back(std::move(v));
        r.models.push_back({"model-" + std::to_string(m), "0123456789ab", "ready"});
    }
    for (int i = 0; i < n; ++i)
        r.members.push_back({node_name(i), "10.0.0." + std::to_string(i + 1) + ":7070"});
    return r;
}

/// One step's output for `s` streams of one requesting node: a token each, its text a typical
/// piece of 4 bytes; `done` of them end in this step.
msg::stream_batch batch(int s, int done) {
    msg::stream_batch b;
    for (int i = 0; i < s; ++i) {
        msg::token_event ev;
        ev.id = 1000000 + static_cast<msg::request_id>(i);
        ev.index = 40;
        ev.token = 12345;
        ev.text = " the";
        ev.logprob = -0.25f;
        b.tokens.push_back(std::move(ev));
    }
    for (int i = 0; i < done; ++i) {
        msg::completion c;
        c.id = 1000000 + static_cast<msg::request_id>(i);
        c.finish = bitnet::msg::finish_reason::length;
        c.model = "model-0";
        c.model_version = "0123456789ab";
        c.prompt_tokens = 16;
        c.completion_tokens = 64;
        c.queue_us = c.prefill_us = c.ttft_us = c.decode_us = c.total_us = 123456;
        b.done.push_back(std::move(c));
    }
    return b;
}

/// A markdown table's header: the corner, then one column per value.
void grid_header(const char* corner, const std::vector<int>& columns) {
    std::printf("| %s |", corner);
    for (int c : columns)
        std::printf(" %d |", c);
    std::printf("\n|---|");
    for (std::size_t i = 0; i < columns.size(); ++i)
        std::printf("---|");
    std::printf("\n");
}

/// What the heartbeats cost in a full mesh, one table per models-per-node count.
void print_full_mesh(caf::actor_system& sys, const std::vector<int>& ks, const std::vector<int>& ns,
                     const msg::executor_info& info, const caf::actor& handle, double per_s,
                     double frame_bytes, double node_tps) {
    for (int k : ks) {
        const auto replica_bytes = actors::wire_size(sys, report(1, 1, info, handle).replicas[0]);
        std::printf("\n## Full mesh, %d model(s) per node (one replica_view = %llu B)\n\n", k,
                    static_cast<unsigned long long>(replica_bytes));
        std::printf(
            "| N | links (cluster) | heartbeats/s sent per node | heartbeats/s cluster-wide "
            "| report B | heartbeat B/s out per node | heartbeat B/s in+out per node | "
            "heartbeat B/s cluster-wide | routing entries per node (N x k) | routing state B "
            "per node (serialized) | report B without executor_info | heartbeat msgs per "
            "generated token (cluster at %.0f tok/s/node) |\n",
            node_tps);
        std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (int n : ns) {
            const double size =
                static_cast<double>(actors::wire_size(sys, report(n, k, info, handle))) +
                frame_bytes;
            const double out_msgs = (n - 1) * per_s;
            const double cluster_msgs = static_cast<double>(n) * (n - 1) * per_s;
            // executor_info is static per version: a heartbeat could carry load only and send it
            // on join and on change.
            const double lean =
                static_cast<double>(actors::wire_size(sys, report(n, k, {}, handle))) + frame_bytes;
            std::printf("| %d | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %d | %llu | %.0f | "
                        "%.3f |\n",
                        n, n * (n - 1) / 2, out_msgs, cluster_msgs, size, out_msgs * size,
                        2 * out_msgs * size, cluster_msgs * size, n * k,
                        static_cast<unsigned long long>(n * k) * replica_bytes, lean,
                        cluster_msgs / (n * node_tps));
        }
    }
}

/// What the streamed output costs on the wire, and how many messages a token takes.
void print_stream_output(caf::actor_system& sys, const std::vector<int>& ss,
                         const std::vector<int>& ns, double frame_bytes) {
    std::printf("\n## Stream output: one stream_batch per step per (replica, requesting node)\n\n");
    std::printf("| streams in the batch | serialized B (+frame) | B per token | messages per token "
                "| B per token, a step where all end |\n|---|---|---|---|---|\n");
    for (int s : ss) {
        const double b = static_cast<double>(actors::wire_size(sys, batch(s, 0))) + frame_bytes;
        const double e = static_cast<double>(actors::wire_size(sys, batch(s, s))) + frame_bytes;
        std::printf("| %d | %.0f | %.1f | %.4f | %.1f |\n", s, b, b / s, 1.0 / s, e / s);
    }
    // Every node takes clients and places each request on the least-loaded replica anywhere: a
    // replica's s streams come from N origins uniformly, its own node's need no message, and each
    // other origin among them gets one stream_batch per step.
    std::printf("\n## Network messages per generated token, every node taking clients (expected "
                "(N-1)(1-(1-1/N)^s)/s; behind one router: 1/s)\n\n");
    grid_header("N \\ s", ss);
    for (int n : ns) {
        std::printf("| %d |", n);
        for (int s : ss) {
            const double origins = (n - 1) * (1.0 - std::pow(1.0 - 1.0 / n, s));
            std::printf(" %.3f |", origins / s);
        }
        std::printf("\n");
    }
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"cluster membership, routing and message sizes by node count"};
    std::string model_path;
    std::vector<int> ks{1, 4}, ss{1, 8, 32}, ns{2, 4, 8, 16, 32, 64};
    double interval_ms = 250, frame_bytes = 0, node_tps = 45;
    app.add_option("--model", model_path, "model whose executor_info the replicas carry")
        ->required();
    app.add_option("--interval-ms", interval_ms, "heartbeat interval (cluster_heartbeat_ms)");
    // CLI11 checks the lists: a bad one is a usage error, not an exception.
    app.add_option("--models", ks, "models per node, comma-separated")
        ->delimiter(',')
        ->check(CLI::Range(1, 1024));
    app.add_option("--streams", ss, "streams per step per (replica, requesting node)")
        ->delimiter(',')
        ->check(CLI::Range(1, 1 << 20));
    app.add_option("--nodes", ns, "node counts")->delimiter(',')->check(CLI::Range(1, 4096));
    app.add_option("--frame-bytes", frame_bytes, "BASP bytes around each message on the wire");
    app.add_option("--node-tps", node_tps, "generated tokens/s of one node");
    CLI11_PARSE(app, argc, argv);

    config cfg;
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    msg::executor_order order;
    order.alias = "model-0";
    order.engine.model_path = model_path;
    order.engine.n_threads = 1;
    auto exec = actors::spawn_executor(sys, order);
    msg::executor_info info;
    bool ok = false;
    self->request(exec, std::chrono::minutes(5), msg::info_atom_v)
        .receive(
            [&](msg::executor_info& i) {
                info = std::move(i);
                ok = true;
            },
            [&](caf::error& e) {
                std::fprintf(stderr, "executor on %s: %s\n", model_path.c_str(),
                             caf::to_string(e).c_str());
            });
    self->send_exit(exec, caf::exit_reason::user_shutdown);
    if (!ok)
        return 1;
    auto handle = sys.spawn([] { return caf::behavior{[](int) {}}; });

    const double per_s = 1000.0 / interval_ms;
    const auto info_bytes = actors::wire_size(sys, info);
    std::printf("# cluster_scaling: --model %s, heartbeat every %.0f ms (%.1f/s to each peer), "
                "frame %.0f B/message, one node %.1f tok/s\n",
                model_path.c_str(), interval_ms, per_s, frame_bytes, node_tps);
    std::printf("executor_info: %llu B serialized (describe %zu B, %zu kernel choices)\n",
                static_cast<unsigned long long>(info_bytes), info.describe.size(),
                info.kernels.size());

    // The report's size as a function of N and k: measured at each point.
    std::printf("\n## Heartbeat (node_report) size, serialized bytes\n\n");
    grid_header("N \\ k", ks);
    for (int n : ns) {
        std::printf("| %d |", n);
        for (int k : ks)
            std::printf(" %llu |", static_cast<unsigned long long>(
                                       actors::wire_size(sys, report(n, k, info, handle))));
        std::printf("\n");
    }

    print_full_mesh(sys, ks, ns, info, handle, per_s, frame_bytes, node_tps);
    print_stream_output(sys, ss, ns, frame_bytes);
    // The actor system waits for every actor at exit: the stand-in handle must end.
    self->send_exit(handle, caf::exit_reason::user_shutdown);
    return 0;
}
