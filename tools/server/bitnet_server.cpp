// bitnet-server: config -> actor system (admission, supervisor -> executor + batcher per model)
// -> HTTP. Each model's tokenizer is read from its GGUF for the HTTP layer (tokenize, chat
// templates, logprobs) and the batcher (streaming detokenization); the executor loads the engine.
// SIGTERM/SIGINT drain: stop accepting, let running requests finish up to drain_timeout_ms, then
// cancel and answer what is left (http::server::cut_all), then stop in order (HTTP, then actors)
// and exit 0.
#include "actors/admission.hpp"
#include "actors/supervisor.hpp"
#include "conf/server_config.hpp"
#include "http/metrics.hpp"
#include "http/server.hpp"
#include "kernels/cpu_features.hpp"
#include "messages/errors.hpp"
#include "model/engine.hpp"
#include "model_text.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/scoped_actor.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <map>
#include <thread>

using namespace bitnet;

namespace {

struct system_config : caf::actor_system_config {
    explicit system_config(const conf::server_config& c) {
        msg::register_messages(*this);
        set("scheduler.max-threads", static_cast<int>(c.caf_threads));
        // Measured on 2 vCPUs: sharing halves request latency against stealing.
        set("scheduler.policy", caf::atom("sharing"));
    }
};

/// Sum of running and waiting sequences over all models (0 when admission does not answer).
std::uint64_t in_flight(caf::scoped_actor& self, const msg::admission_actor& adm) {
    std::uint64_t n = 0;
    self->request(adm, std::chrono::seconds(2), msg::stats_atom_v)
        .receive(
            [&](const std::vector<msg::batcher_stats>& stats) {
                for (const auto& s : stats)
                    n += s.running + s.waiting[0] + s.waiting[1] + s.waiting[2];
            },
            [](const caf::error&) {});
    return n;
}

http::build_info build_info() {
    http::build_info b;
#ifdef BITNET_GIT_SHA
    b.git_sha = BITNET_GIT_SHA;
#endif
#ifdef BITNET_BUILD_FLAGS
    b.flags = BITNET_BUILD_FLAGS;
#endif
    b.compiler = std::string("g++ ") + __VERSION__;
    const auto& f = kernels::detect_cpu_features();
    b.cpu_features = std::string(f.avx2 ? "avx2 " : "") + (f.avx512 ? "avx512-vnni " : "") +
                     "kernels=" + std::string(kernels::isa_name(kernels::best_isa()));
    return b;
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    for (const auto& a : args)
        if (a == "--help" || a == "-h") {
            std::fputs(conf::usage().c_str(), stdout);
            return 0;
        }
    auto cfg = conf::load_config({.file = {}, .env = conf::process_env(), .args = args});
    if (!cfg) {
        std::fprintf(stderr, "bitnet-server: %s\n", cfg.error().to_string().c_str());
        return 2;
    }
    for (const auto& a : args)
        if (a == "--print-config") {
            std::printf("%s\n", conf::to_json(*cfg).c_str());
            return 0;
        }
    spdlog::set_level(spdlog::level::from_str(cfg->log_level));

    // Signals are taken synchronously by the main thread: block them before any thread starts
    // so every thread inherits the mask.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

    system_config caf_cfg(*cfg);
    caf::actor_system sys{caf_cfg};
    spdlog::info("actor system up ({} CAF threads)", cfg->caf_threads);

    actors::admission_options ao;
    ao.default_model = cfg->default_entry() ? cfg->default_entry()->alias : std::string{};
    ao.max_waiting_requests = cfg->max_waiting_requests;
    ao.max_waiting_prompt_tokens = cfg->max_waiting_prompt_tokens;
    ao.key_quota = {cfg->quota_requests_per_minute, cfg->quota_burst};
    auto admission = actors::spawn_admission(sys, ao);

    // The text side of every model, read before anything is served (no weights are touched).
    auto texts = std::make_shared<std::map<std::string, server::model_text>>();
    for (const auto& m : cfg->models) {
        auto t = server::read_model_text(m.path);
        if (!t) {
            // The executor's load will fail and report the same file; keep serving the others.
            spdlog::error("model '{}': no tokenizer from {}: {}", m.alias, m.path,
                          t.error().to_string());
            continue;
        }
        if (!t->chat_known)
            spdlog::warn("model '{}': chat template not recognised; chat requests use the BitNet "
                         "form",
                         m.alias);
        (*texts)[m.alias] = std::move(*t);
    }
    auto metrics = std::make_shared<http::metrics>();

    actors::supervisor_options so;
    so.admission = admission;
    for (const auto& m : cfg->models) {
        actors::model_spec spec;
        spec.alias = m.alias;
        spec.path = m.path;
        model::engine_options eo;
        eo.model_path = m.path;
        eo.n_threads = static_cast<int>(cfg->n_threads);
        eo.kv_budget_bytes = cfg->kv_budget_bytes;
        eo.kv_block_tokens = cfg->kv_block_tokens;
        eo.max_batch_tokens = cfg->max_batch_tokens;
        spec.executor.make_engine = [eo, alias = m.alias]() {
            spdlog::info("model '{}': loading {}", alias, eo.model_path);
            auto e = model::engine::load(eo);
            if (e)
                spdlog::info("model '{}': loaded: {}", alias, (*e)->describe());
            else
                spdlog::error("model '{}': load failed: {}", alias, e.error().to_string());
            return e;
        };
        if (auto it = texts->find(m.alias); it != texts->end())
            spec.batcher.tokenizer = it->second.tokenizer;
        spec.batcher.on_step = [metrics](std::uint32_t n, std::int64_t us) {
            metrics->step(n, static_cast<double>(us) / 1e6);
        };
        spec.batcher.policy.max_batch_tokens = cfg->max_batch_tokens;
        spec.batcher.policy.max_batch_seqs = cfg->max_batch_seqs;
        spec.batcher.policy.weights = {cfg->priority_weight_high, cfg->priority_weight_normal,
                                       cfg->priority_weight_low};
        spec.batcher.default_timeout_ms = cfg->default_timeout_ms;
        so.models.push_back(std::move(spec));
    }
    if (so.models.empty())
        spdlog::warn("no models configured (set \"models\", BITNET_MODEL or --model): "
                     "/health/ready stays 503");
    auto supervisor = actors::spawn_supervisor(sys, so);

    http::server_options ho;
    ho.address = cfg->listen_address;
    ho.port = static_cast<std::uint16_t>(cfg->port);
    ho.io_threads = cfg->io_threads;
    ho.max_body_bytes = cfg->max_body_bytes;
    ho.read_timeout = std::chrono::milliseconds(cfg->read_timeout_ms);
    ho.write_timeout = std::chrono::milliseconds(cfg->write_timeout_ms);
    ho.sse_ping = std::chrono::milliseconds(cfg->sse_ping_ms);
    ho.sse_buffer_bytes = cfg->sse_buffer_bytes;
    ho.api_keys = cfg->api_keys;
    ho.admin_keys = cfg->admin_api_keys;
    ho.default_model = ao.default_model;
    ho.text = server::make_text_codec(texts);
    ho.supervisor = supervisor;
    ho.shared_metrics = metrics;
    ho.build = build_info();
    http::server srv(sys, admission, ho);
    auto port = srv.start();
    if (!port) {
        spdlog::error("{}", port.error().to_string());
        caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(admission, caf::exit_reason::user_shutdown);
        return 1;
    }
    // The command-line contract's ready line (scripts wait for it).
    spdlog::info("listening on {}:{}", cfg->listen_address, *port);

    int sig = 0;
    sigwait(&sigs, &sig);
    spdlog::info("signal {}: draining (up to {} ms)", sig, cfg->drain_timeout_ms);
    caf::anon_send(admission, msg::drain_atom_v);
    srv.stop_accepting();
    {
        caf::scoped_actor self{sys};
        const auto until =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(cfg->drain_timeout_ms);
        while (std::chrono::steady_clock::now() < until &&
               (srv.active_requests() > 0 || in_flight(self, admission) > 0))
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // Past the deadline nothing is cut silently: what still runs is cancelled and answered
    // (streams: an error event and finish_reason "cancelled"; plain requests: 503 draining),
    // then the connections get a bounded moment to flush those last bytes.
    if (const auto cut = srv.cut_all(); cut > 0)
        spdlog::warn("drain timeout ({} ms) passed: cancelled {} request(s) still in progress",
                     cfg->drain_timeout_ms, cut);
    const auto flush_until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < flush_until && srv.open_connections() > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    srv.stop();
    caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(admission, caf::exit_reason::user_shutdown);
    spdlog::info("stopped");
    return 0;
}
