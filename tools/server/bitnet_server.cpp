// bitnet-server: config -> actor system (admission, supervisor -> executor + batcher + text actor
// per model version) -> HTTP. Each version's tokenizer and chat template are read from its GGUF
// for its text actor (prompts, chat templates, /v1/tokenize) and its batcher (streaming
// detokenization, logprob pieces); the executor loads the engine. Configured models load at
// start-up through the same pipeline as POST /v1/models/load. SIGTERM/SIGINT drain: readiness 503
// and new work 503 + Retry-After (the listener keeps answering), running requests finish up to
// drain_timeout_ms, then cancel and answer what is left (http::server::cut_all), then stop in order
// (HTTP, then actors) and exit 0. Actors still running at the drain deadline (a model load in the
// middle of reading a file) are not waited for: the process exits without them. SIGHUP re-reads
// the HTTPS certificate and key (tls_cert, tls_key) for new connections and never ends the
// process.
#include "actors/admission/admission.hpp"
#include "actors/supervisor/device_placements.hpp"
#include "actors/supervisor/supervisor.hpp"
#include "basp_guard.hpp"
#include "cluster_start.hpp"
#include "common/trace.hpp"
#include "compute_pool.hpp"
#include "conf/server_config.hpp"
#include "device_startup.hpp"
#include "http/observe/log_context.hpp"
#include "http/observe/metrics.hpp"
#include "http/observe/otlp_exporter.hpp"
#include "http/routes/server.hpp"
#include "http/transport/tls_context.hpp"
#include "kernels/compute_pool.hpp"
#include "kernels/cpu_features.hpp"
#include "messages/errors.hpp"
#include "model/constrain/mask_cache.hpp"
#include "model/engine/engine.hpp"
#include "model_text.hpp"

#include <caf/actor_registry.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>

using namespace bitnet;

namespace {

struct system_config : caf::actor_system_config {
    explicit system_config(const conf::server_config& c) {
        msg::register_messages(*this);
        server::load_remoting(*this, c);
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

/// Polls (bounded by `until`) for every actor of `sys` to have ended; whether they did.
bool actors_done_by(caf::actor_system& sys, std::chrono::steady_clock::time_point until) {
    while (sys.registry().running() > 0) {
        if (std::chrono::steady_clock::now() >= until)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
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
#ifdef BITNET_TEST_HOOKS
    b.test_hooks = true;
#endif
    const auto& f = kernels::detect_cpu_features();
    b.cpu_features = std::string(f.avx2 ? "avx2 " : "") + (f.avx512 ? "avx512-vnni " : "") +
                     "kernels=" + std::string(kernels::isa_name(kernels::best_isa()));
    return b;
}

/// The step metrics' observer: batchers send it every step's sequence count and duration (their
/// orders carry its handle, no callback).
caf::actor spawn_step_metrics(caf::actor_system& sys, std::shared_ptr<http::metrics> metrics) {
    // One unused spawn argument: CAF 0.17 dereferences a null argument tuple otherwise (UBSan).
    return sys.spawn(
        [metrics](caf::event_based_actor*, int /*unused*/) -> caf::behavior {
            return {[metrics](msg::step_atom, std::uint32_t n_seqs, std::int64_t step_us) {
                metrics->step(n_seqs, static_cast<double>(step_us) / 1e6);
            }};
        },
        0);
}

/// A version's spec from a load order (start-up models and POST /v1/models/load alike): its
/// text side read from the file, its executor and batcher orders from the configuration. Runs on
/// the supervisor's loader thread: reading the tokenizer touches no weights.
result<actors::model_spec> spec_for(const conf::server_config& c,
                                    const http::device_inventory& devices,
                                    const caf::actor& step_metrics, const msg::load_order& order) {
    model::chat_template_options chat;
    chat.template_file = c.chat_template_file;
    chat.fallback_on_error = c.chat_template_fallback != 0;
    auto text = server::read_model_text(order.path, chat);
    if (!text)
        return error{text.error().value(),
                     "the text side of " + order.path + ": " + text.error().message};
    if (!text->chat_notice.empty())
        spdlog::warn("model '{}': {}", order.alias, text->chat_notice);
    spdlog::info("model '{}': chat template from {}", order.alias, text->chat_origin);
    actors::model_spec spec;
    spec.alias = order.alias;
    spec.path = order.path;
    spec.kv_budget_bytes = c.kv_budget_bytes;
    auto& eo = spec.executor;
    eo.alias = order.alias;
    // Its placements: the server's list for "auto", else the one named and then the CPU.
    spec.devices = actors::placements_for(order.device, devices.placements,
                                          static_cast<int>(devices.cuda_devices.size()));
    eo.device = spec.devices.front();
    eo.device_reason = server::first_placement_reason(devices, spec.devices, order.device);
    eo.engine.model_path = order.path;
    eo.engine.n_threads = static_cast<int>(c.n_threads);
    eo.engine.kv_budget_bytes = c.kv_budget_bytes;
    eo.engine.kv_block_tokens = c.kv_block_tokens;
    eo.engine.max_batch_tokens = c.max_batch_tokens;
    eo.engine.q8_logits = c.q8_logits != 0;
    eo.engine.greedy_screen = c.greedy_screen != 0;
    eo.engine.greedy_screen_rows = c.greedy_screen_rows;
    eo.engine.kv_q8_0 = c.kv_cache_type == "q8_0";
    eo.engine.tl_kernel_config = c.tl_kernel_config;
    eo.draft_model = order.draft_path;
    eo.mask_ms_per_token = c.mask_ms_per_token;
    spec.text = std::move(text->text);
    spec.text.special_in_content = c.chat_content_special != 0;
    auto& bo = spec.batcher;
    bo.step_observer = step_metrics;
    bo.policy.max_batch_tokens = c.max_batch_tokens;
    bo.policy.decoding_batch_tokens = c.decoding_batch_tokens;
    bo.policy.max_batch_seqs = c.max_batch_seqs;
    bo.policy.tenant_share_percent = c.tenant_share_percent;
    bo.policy.prefix_caching = c.prefix_caching != 0;
    bo.policy.spec_max_draft = c.spec_max_draft;
    bo.policy.spec_step_tokens = c.spec_step_tokens;
    bo.policy.spec_by_default = c.speculative == "auto";
    bo.policy.spec_draft_model = !order.draft_path.empty() && c.spec_max_draft > 0;
    bo.policy.weights = {c.priority_weight_high, c.priority_weight_normal, c.priority_weight_low};
    bo.default_timeout_ms = c.default_timeout_ms;
    bo.step_timeout_ms = c.step_timeout_ms;
#ifdef BITNET_TEST_HOOKS
    bo.opener_bias = static_cast<float>(c.test_tool_call_opener_bias);
#endif
    return spec;
}

actors::supervisor_options supervisor_options_for(const conf::server_config& cfg,
                                                  const http::device_inventory& devices,
                                                  msg::admission_actor admission,
                                                  caf::actor step_metrics,
                                                  std::shared_ptr<http::metrics> metrics) {
    actors::supervisor_options so;
    so.admission = std::move(admission);
    so.memory_budget_bytes = cfg.memory_budget_bytes;
    so.probation = std::chrono::seconds(cfg.probation_s);
    so.keep_standby = cfg.keep_standby != 0;
    so.drain_timeout = std::chrono::milliseconds(cfg.default_timeout_ms);
    so.make_spec = [c = cfg, devices, step_metrics](const msg::load_order& order) {
        return spec_for(c, devices, step_metrics, order);
    };
    // Swaps live in memory only: a restart serves the configured files again, and the log says
    // so at start and at every swap away from them (README, "Model management").
    std::map<std::string, std::string> configured;
    for (const auto& m : cfg.models)
        configured[m.alias] = m.path;
    so.on_serving = [configured](const std::string& alias, const actors::model_spec* serving) {
        if (!serving)
            return spdlog::info("model '{}': unloaded (until a restart, which serves the "
                                "configured models again)",
                                alias);
        spdlog::info("model '{}': serving {} on {} ({})", alias, serving->path,
                     serving->executor.device, serving->executor.device_reason);
        const auto it = configured.find(alias);
        if (it == configured.end() || it->second != serving->path)
            spdlog::warn("model '{}': this version is not kept across a restart, which serves {}",
                         alias,
                         it == configured.end() ? std::string("nothing under this alias")
                                                : "the configured " + it->second);
    };
    so.on_swap = [metrics](const std::string& result) { metrics->swap(result); };
    so.on_stall = [metrics](const std::string& alias) { metrics->executor_stall(alias); };
    so.on_fallback = [metrics](const actors::device_fallback& f) {
        metrics->device_fallback(f.alias, f.from, f.to, f.reason_class);
    };
    for (const auto& m : cfg.models) {
        msg::load_order order;
        order.alias = m.alias;
        order.path = m.path;
        order.draft_path = m.draft_or(cfg.draft_model);
        so.initial.push_back(order);
        spdlog::info("model '{}': starts from {}, the configured file (a hot-swap or load made "
                     "before a restart is not kept)",
                     m.alias, m.path);
    }
    if (so.initial.empty())
        spdlog::warn("no models configured (set \"models\", BITNET_MODEL or --model): "
                     "/health/ready stays 503 until POST /v1/models/load");
    return so;
}

http::server_options http_options_for(const conf::server_config& cfg) {
    http::server_options ho;
    ho.address = cfg.listen_address;
    ho.port = static_cast<std::uint16_t>(cfg.port);
    ho.io_threads = cfg.io_threads;
    ho.max_body_bytes = cfg.max_body_bytes;
    ho.max_n = cfg.max_n;
    ho.read_timeout = std::chrono::milliseconds(cfg.read_timeout_ms);
    ho.write_timeout = std::chrono::milliseconds(cfg.write_timeout_ms);
    ho.header_timeout = std::chrono::milliseconds(cfg.request_header_timeout_ms);
    ho.min_body_rate = cfg.request_body_min_rate;
    ho.sse_ping = std::chrono::milliseconds(cfg.sse_ping_ms);
    ho.sse_buffer_bytes = cfg.sse_buffer_bytes;
    ho.responses_store = {cfg.responses_store_max, std::chrono::seconds(cfg.responses_store_ttl_s),
                          static_cast<std::size_t>(cfg.responses_store_bytes),
                          static_cast<std::size_t>(cfg.responses_store_total_bytes)};
    ho.api_keys = cfg.api_keys;
    ho.metrics_key = cfg.metrics_api_key;
    for (const auto& g : cfg.prefix_cache_share_groups)
        ho.cache_share_groups.push_back(conf::share_group_keys(g));
    ho.admin_keys = cfg.admin_api_keys;
    ho.cors_origins = cfg.cors_allowed_origins;
    ho.admin_open = cfg.admin_open != 0;
    ho.web_ui = cfg.web_ui != 0;
    ho.max_connections = cfg.max_connections;
    ho.max_connections_per_client = cfg.max_connections_per_client;
    ho.trusted_proxies = cfg.trusted_proxies;
    ho.max_header_bytes = cfg.max_header_bytes;
    ho.tls_cert = cfg.tls_cert;
    ho.tls_key = cfg.tls_key;
    if (ho.admin_keys.empty())
        spdlog::log(ho.admin_open ? spdlog::level::warn : spdlog::level::info,
                    ho.admin_open ? "admin_open: model management needs no key (local use only)"
                                  : "no admin key configured: model management routes answer 403");
    ho.default_model = cfg.default_entry() ? cfg.default_entry()->alias : std::string{};
    ho.build = build_info();
#ifdef BITNET_TEST_HOOKS
    ho.test_hooks = cfg.test_hooks != 0;
#else
    // Only a config file can set them here (conf: find_file_key).
    if (cfg.test_hooks != 0 || cfg.test_tool_call_opener_bias != 0)
        spdlog::warn("test_hooks or test_tool_call_opener_bias is set but this build has no test "
                     "hooks: ignored");
#endif
    ho.clustered = server::clustered(cfg);
    ho.first_request_id = server::first_request_id(cfg);
    return ho;
}

/// SIGHUP: re-read the HTTPS certificate and key for new connections (open ones keep theirs);
/// a file that does not load leaves the old pair serving.
void reload_on_sighup(const conf::server_config& cfg, http::server& srv) {
    if (cfg.tls_cert.empty()) {
        spdlog::info("SIGHUP: plain HTTP, no certificate to re-read; nothing to do");
        return;
    }
    if (auto r = srv.reload_tls(); !r)
        spdlog::error("SIGHUP: HTTPS certificate not reloaded, the previous one stays in use: {}",
                      r.error().message);
    else
        spdlog::info("SIGHUP: HTTPS certificate reloaded from {} (new connections use it)",
                     cfg.tls_cert);
}

/// SIGTERM/SIGINT: the drain, then the ordered stop (see the file comment). Returns the exit
/// status; past the drain deadline it may end the process itself.
int drain_and_stop(caf::actor_system& sys, const conf::server_config& cfg, http::server& srv,
                   const std::vector<caf::actor>& actors, const msg::admission_actor& admission,
                   int sig) {
    const auto drain_deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(cfg.drain_timeout_ms);
    spdlog::info("signal {}: draining (up to {} ms)", sig, cfg.drain_timeout_ms);
    caf::anon_send(admission, msg::drain_atom_v);
    srv.begin_drain();
    {
        caf::scoped_actor self{sys};
        while (std::chrono::steady_clock::now() < drain_deadline &&
               (srv.active_requests() > 0 || in_flight(self, admission) > 0))
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // Past the deadline nothing is cut silently: what still runs is cancelled and answered
    // (streams: an error event and finish_reason "cancelled"; plain requests: 503 draining),
    // then the connections get a bounded moment to flush those last bytes.
    if (const auto cut = srv.cut_all(); cut > 0)
        spdlog::warn("drain timeout ({} ms) passed: cancelled {} request(s) still in progress",
                     cfg.drain_timeout_ms, cut);
    const auto flush_until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < flush_until && srv.open_connections() > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    srv.stop();
    for (const auto& a : actors)
        caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    if (!actors_done_by(sys, std::max(drain_deadline, std::chrono::steady_clock::now() +
                                                          std::chrono::seconds(1)))) {
        // The actor system's destructor would wait for them without a bound (a detached thread
        // reading a huge model file, an engine still loading): past the drain deadline nothing
        // is left that a client waits for, so the process ends without them.
        spdlog::warn("{} actor(s) still running at the drain deadline (a model load in "
                     "progress): exiting without waiting for them",
                     sys.registry().running());
        spdlog::info("stopped");
        spdlog::shutdown();
        std::fflush(nullptr);
        std::_Exit(0);
    }
    spdlog::info("stopped");
    return 0;
}

/// Tracing, when otlp_endpoint is set: the endpoint and headers checked as the exporter reads
/// them, the recorder configured, the exporter started (null without an endpoint).
result<std::unique_ptr<http::otlp_exporter>> start_tracing(const conf::server_config& cfg,
                                                           const std::string& node) {
    if (cfg.otlp_endpoint.empty())
        return std::unique_ptr<http::otlp_exporter>();
    auto target = http::parse_otlp_endpoint(cfg.otlp_endpoint);
    auto headers = http::parse_otlp_headers(cfg.otlp_headers);
    if (!target)
        return target.error();
    if (!headers)
        return headers.error();
    trace::recorder::process().configure({.enabled = true,
                                          .sample_ratio = cfg.otlp_sample_ratio,
                                          .queue_spans = cfg.otlp_queue_spans,
                                          .include_text = cfg.otlp_include_text != 0});
    http::otlp_options o;
    o.endpoint = cfg.otlp_endpoint;
    o.headers = std::move(*headers);
    o.timeout = std::chrono::milliseconds(cfg.otlp_timeout_ms);
    const auto version = build_info().version;
    o.resource = {{"service.name", std::string("bitnet-serve")},
                  {"service.instance.id", node},
                  {"service.version", version}};
    o.scope_version = version;
    auto exporter = std::make_unique<http::otlp_exporter>(std::move(o));
    spdlog::info("tracing: spans go to {}{} as OTLP/HTTP protobuf (sample ratio {})",
                 target->tls ? "https://" : "http://",
                 target->host + ":" + target->port + target->path, cfg.otlp_sample_ratio);
    return exporter;
}

/// SIGTERM, SIGINT and SIGHUP are taken synchronously by the main thread: blocked before any
/// thread starts, so every thread inherits the mask. SIGHUP re-reads the HTTPS certificate; it
/// must never take the default action (ending the process), TLS or not.
sigset_t block_signals() {
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    return sigs;
}

void log_compute(const conf::server_config& cfg, const std::string& threads_why) {
    spdlog::info("compute: {} thread(s) ({}), an idle one spins {} before it sleeps (spin {})",
                 cfg.n_threads, threads_why,
                 cfg.compute_spin_count == 0
                     ? std::string("not at all")
                     : std::to_string(cfg.compute_spin_count) + " iterations",
                 cfg.compute_spin_count);
}

/// Admission's caps and quotas; in a cluster, the node's name and the relay's counters.
actors::admission_options admission_options_for(const conf::server_config& cfg,
                                                const std::string& node,
                                                const std::shared_ptr<http::metrics>& metrics) {
    actors::admission_options ao;
    ao.default_model = cfg.default_entry() ? cfg.default_entry()->alias : std::string{};
    for (const auto& m : cfg.models)
        ao.startup_models.push_back(m.alias);
    ao.max_waiting_requests = cfg.max_waiting_requests;
    ao.max_waiting_prompt_tokens = cfg.max_waiting_prompt_tokens;
    ao.key_quota = {cfg.quota_requests_per_minute, cfg.quota_burst};
    if (server::clustered(cfg)) {
        ao.node_name = node;
        ao.on_migrated = [metrics] { metrics->migrated(); };
        ao.on_relay_batch = [metrics](const std::string& peer, std::uint64_t bytes) {
            metrics->link(peer, "in", "stream", bytes);
        };
    }
    return ao;
}

/// The log format: JSON lines, or text lines with control characters escaped.
void use_logs(const conf::server_config& cfg, const std::string& node) {
    if (cfg.log_format == "json")
        http::use_json_logs(node);
    else
        http::use_text_logs();
}

/// The process-wide structured-output caches' byte budgets.
void set_process_budgets(const conf::server_config& cfg) {
    model::constrain::mask_cache::shared().set_budget(cfg.mask_cache_bytes);
    model::constrain::schema_cache::shared().set_budget(cfg.schema_cache_bytes);
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
    kernels::set_idle_spin(cfg->compute_spin_count);
    std::string threads_why;
    cfg->n_threads =
        static_cast<std::uint32_t>(server::compute_threads(cfg->n_threads, &threads_why));
    spdlog::set_level(spdlog::level::from_str(cfg->log_level));
    // The HTTPS files as OpenSSL reads them (a certificate, its key, the two belonging
    // together): a configuration error like the others, before anything starts.
    if (!cfg->tls_cert.empty()) {
        if (auto tls = http::load_tls_context(cfg->tls_cert, cfg->tls_key); !tls) {
            std::fprintf(stderr, "bitnet-server: config: %s\n", tls.error().message.c_str());
            return 2;
        }
    }

    const sigset_t sigs = block_signals();

    const auto node = server::node_name_of(*cfg);
    if (!node) {
        std::fprintf(stderr, "bitnet-server: %s\n", node.error().to_string().c_str());
        return 2;
    }
    use_logs(*cfg, *node);
    log_compute(*cfg, threads_why);
    // Tracing: the endpoint and headers as the exporter reads them, checked before anything
    // starts; the exporter's thread outlives the HTTP server (declared before it), so the spans
    // of the last requests still go out at shutdown.
    std::unique_ptr<http::otlp_exporter> exporter;
    if (auto started = start_tracing(*cfg, *node); !started) {
        std::fprintf(stderr, "bitnet-server: config: %s\n", started.error().to_string().c_str());
        return 2;
    } else {
        exporter = std::move(*started);
    }
    system_config caf_cfg(*cfg);
    caf::actor_system sys{caf_cfg};
    spdlog::info("actor system up ({} CAF threads)", cfg->caf_threads);
    set_process_budgets(*cfg);

    auto metrics = std::make_shared<http::metrics>();
    auto admission = actors::spawn_admission(sys, admission_options_for(*cfg, *node, metrics));

    auto step_metrics = spawn_step_metrics(sys, metrics);
    const auto devices = server::start_devices(cfg->devices);
    auto supervisor = actors::spawn_supervisor(
        sys, supervisor_options_for(*cfg, devices, admission, step_metrics, metrics));
    std::unique_ptr<server::basp_guard> cluster_guard;
    auto cluster =
        server::start_cluster(sys, *cfg, *node, admission, supervisor, metrics, cluster_guard);
    if (!cluster) {
        spdlog::error("{}", cluster.error().to_string());
        for (const caf::actor& a : {caf::actor_cast<caf::actor>(supervisor),
                                    caf::actor_cast<caf::actor>(admission), step_metrics})
            caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
        return 1;
    }
    auto ho = http_options_for(*cfg);
    ho.build.devices = devices;
    ho.build.compute = {cfg->n_threads, threads_why == "n_threads" ? "n_threads" : "cpus",
                        cfg->compute_spin_count};
    ho.supervisor = supervisor;
    ho.shared_metrics = metrics;
    ho.cluster = *cluster;
    http::server srv(sys, admission, ho);
    // The cluster actor first: it stops its heartbeats, so peers see this node leave.
    const std::vector<caf::actor> stop_order{caf::actor_cast<caf::actor>(*cluster),
                                             caf::actor_cast<caf::actor>(supervisor),
                                             caf::actor_cast<caf::actor>(admission), step_metrics};
    auto port = srv.start();
    if (!port) {
        spdlog::error("{}", port.error().to_string());
        for (const auto& a : stop_order)
            caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
        return 1;
    }
    // The command-line contract's ready line (scripts wait for it).
    spdlog::info("listening on {}:{}{}", cfg->listen_address, *port,
                 cfg->tls_cert.empty() ? "" : " (HTTPS)");

    int sig = 0;
    while (sigwait(&sigs, &sig) == 0 && sig == SIGHUP)
        reload_on_sighup(*cfg, srv);
    return drain_and_stop(sys, *cfg, srv, stop_order, admission, sig);
}
