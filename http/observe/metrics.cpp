#include "http/observe/metrics.hpp"

#include "common/trace.hpp"
#include "http/observe/rate_window.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <map>
#include <mutex>

namespace bitnet::http {

namespace pm = prometheus;

namespace {
const pm::Histogram::BucketBoundaries k_latency{0.005, 0.01, 0.025, 0.05, 0.1,  0.25, 0.5,
                                                1.0,   2.5,  5.0,   10.0, 30.0, 60.0};
const pm::Histogram::BucketBoundaries k_batch{1, 2, 4, 8, 16, 32, 64, 128, 256};
} // namespace

struct metrics::impl {
    // /v1/stats' figures (prometheus-cpp keeps bucket counts only; these are exact).
    mutable std::mutex mu;
    std::vector<std::uint64_t> batch_counts; ///< [n] = steps with n sequences
    std::uint64_t batch_sum = 0;
    rate_window prompt_rate, generated_rate;
    std::map<std::string, std::uint64_t> rejects;

    std::shared_ptr<pm::Registry> reg = std::make_shared<pm::Registry>();
    pm::Family<pm::Counter>& requests = pm::BuildCounter()
                                            .Name("bitnet_requests_total")
                                            .Help("HTTP requests by route and status")
                                            .Register(*reg);
    pm::Histogram& duration = pm::BuildHistogram()
                                  .Name("bitnet_request_duration_seconds")
                                  .Help("end-to-end request latency")
                                  .Register(*reg)
                                  .Add({}, k_latency);
    pm::Histogram& ttft = pm::BuildHistogram()
                              .Name("bitnet_time_to_first_token_seconds")
                              .Help("time to first token")
                              .Register(*reg)
                              .Add({}, k_latency);
    pm::Histogram& itl = pm::BuildHistogram()
                             .Name("bitnet_inter_token_latency_seconds")
                             .Help("time between streamed tokens")
                             .Register(*reg)
                             .Add({}, k_latency);
    pm::Histogram& queue_time = pm::BuildHistogram()
                                    .Name("bitnet_queue_time_seconds")
                                    .Help("time waiting before the first step")
                                    .Register(*reg)
                                    .Add({}, k_latency);
    pm::Counter& prompt_tokens = pm::BuildCounter()
                                     .Name("bitnet_prompt_tokens_total")
                                     .Help("prompt tokens processed")
                                     .Register(*reg)
                                     .Add({});
    pm::Counter& generated_tokens = pm::BuildCounter()
                                        .Name("bitnet_generated_tokens_total")
                                        .Help("tokens generated")
                                        .Register(*reg)
                                        .Add({});
    pm::Gauge& running = pm::BuildGauge()
                             .Name("bitnet_requests_running")
                             .Help("sequences in the running batch")
                             .Register(*reg)
                             .Add({});
    pm::Family<pm::Gauge>& waiting = pm::BuildGauge()
                                         .Name("bitnet_requests_waiting")
                                         .Help("queued requests by priority")
                                         .Register(*reg);
    pm::Histogram& batch_size = pm::BuildHistogram()
                                    .Name("bitnet_batch_size")
                                    .Help("sequences per step")
                                    .Register(*reg)
                                    .Add({}, k_batch);
    pm::Histogram& step_duration = pm::BuildHistogram()
                                       .Name("bitnet_step_duration_seconds")
                                       .Help("forward pass duration")
                                       .Register(*reg)
                                       .Add({}, k_latency);
    pm::Gauge& kv_usage = pm::BuildGauge()
                              .Name("bitnet_kv_cache_usage_ratio")
                              .Help("KV blocks in use / total")
                              .Register(*reg)
                              .Add({});
    pm::Family<pm::Counter>& rejections = pm::BuildCounter()
                                              .Name("bitnet_admission_rejections_total")
                                              .Help("requests refused by admission, by reason")
                                              .Register(*reg);
    pm::Family<pm::Gauge>& model_info =
        pm::BuildGauge().Name("bitnet_model_info").Help("served models").Register(*reg);
    std::mutex model_info_mutex; ///< scrapes may overlap: one replaces the served set at a time
    std::map<std::array<std::string, 4>, pm::Gauge*> model_info_series;
    pm::Family<pm::Counter>& swaps = pm::BuildCounter()
                                         .Name("bitnet_model_swaps_total")
                                         .Help("model hot-swaps by result")
                                         .Register(*reg);
    pm::Family<pm::Counter>& device_fallbacks =
        pm::BuildCounter()
            .Name("bitnet_device_fallbacks_total")
            .Help("model versions moved to their next placement (finally the CPU) because a "
                  "device could not serve them, by alias, from, to and reason")
            .Register(*reg);
    pm::Family<pm::Counter>& stalls =
        pm::BuildCounter()
            .Name("bitnet_executor_stalls_total")
            .Help("steps that ran past step_timeout_ms, each replacing the model's executor, by "
                  "alias")
            .Register(*reg);
    pm::Family<pm::Gauge>& build =
        pm::BuildGauge().Name("bitnet_build_info").Help("build version").Register(*reg);
    // The tables that grow with client input or model versions, each within its byte budget
    // (common/memory_tables.hpp), and the objects a model version owns while it lives.
    pm::Family<pm::Gauge>& table_bytes = pm::BuildGauge()
                                             .Name("bitnet_memory_table_bytes")
                                             .Help("bytes a bounded table holds, by table")
                                             .Register(*reg);
    pm::Family<pm::Gauge>& table_budget =
        pm::BuildGauge()
            .Name("bitnet_memory_table_budget_bytes")
            .Help("a bounded table's byte budget, by table (0: bounded by what owns it)")
            .Register(*reg);
    pm::Family<pm::Gauge>& table_entries = pm::BuildGauge()
                                               .Name("bitnet_memory_table_entries")
                                               .Help("entries a bounded table holds, by table")
                                               .Register(*reg);
    pm::Gauge& connections_open = pm::BuildGauge()
                                      .Name("bitnet_http_connections_open")
                                      .Help("HTTP connections open now")
                                      .Register(*reg)
                                      .Add({});
    pm::Counter& connections_reclaimed =
        pm::BuildCounter()
            .Name("bitnet_http_connections_reclaimed_total")
            .Help("idle connections closed to make room past max_connections or "
                  "max_connections_per_client")
            .Register(*reg)
            .Add({});
    pm::Counter& accept_failures = pm::BuildCounter()
                                       .Name("bitnet_http_accept_failures_total")
                                       .Help("accepts of the HTTP listening socket that failed")
                                       .Register(*reg)
                                       .Add({});
    pm::Family<pm::Gauge>& live_objects =
        pm::BuildGauge()
            .Name("bitnet_live_objects")
            .Help("objects that belong to a model version, alive now, by kind")
            .Register(*reg);
    // The cluster (actors/cluster/cluster_node.hpp), each series labelled with the node that counts
    // it.
    pm::Family<pm::Gauge>& cluster_nodes =
        pm::BuildGauge()
            .Name("bitnet_cluster_nodes")
            .Help("members of the cluster by state, as this node sees them (itself included)")
            .Register(*reg);
    pm::Family<pm::Counter>& migrated =
        pm::BuildCounter()
            .Name("bitnet_requests_migrated_total")
            .Help("streams moved to another replica after the node running them was lost")
            .Register(*reg);
    pm::Family<pm::Counter>& link_messages =
        pm::BuildCounter()
            .Name("bitnet_cluster_link_messages_total")
            .Help("cluster messages over the link to a peer, by direction and kind "
                  "(heartbeat, stream)")
            .Register(*reg);
    // Heartbeat gaps: the buckets resolve the default interval (250 ms) and twice it finely.
    pm::Family<pm::Histogram>& heartbeat_gaps =
        pm::BuildHistogram()
            .Name("bitnet_cluster_heartbeat_gap_seconds")
            .Help("time between two heartbeats of a peer as this node received them")
            .Register(*reg);
    pm::Family<pm::Counter>& suspects =
        pm::BuildCounter()
            .Name("bitnet_cluster_suspect_total")
            .Help("times a peer turned suspect (no heartbeat for half the failure timeout)")
            .Register(*reg);
    pm::Family<pm::Counter>& downs =
        pm::BuildCounter()
            .Name("bitnet_cluster_down_total")
            .Help("times a peer turned down (no heartbeat for the failure timeout, or link lost)")
            .Register(*reg);
    pm::Family<pm::Counter>& dial_failures =
        pm::BuildCounter()
            .Name("bitnet_cluster_dial_failures_total")
            .Help("dials of a member's or a seed's address that did not connect")
            .Register(*reg);
    pm::Family<pm::Counter>& cluster_refusals =
        pm::BuildCounter()
            .Name("bitnet_cluster_refusals_total")
            .Help("peers this node refused, by reason (proof, name_taken, tls, basp, order, "
                  "placement)")
            .Register(*reg);
    pm::Family<pm::Counter>& link_bytes = pm::BuildCounter()
                                              .Name("bitnet_cluster_link_bytes_total")
                                              .Help("serialized bytes of those messages")
                                              .Register(*reg);
    // Automatic prefix caching, counted from the batchers' cumulative figures (deltas since the
    // last poll, per model version: a new version's batcher starts from zero).
    pm::Counter& prefix_queries = pm::BuildCounter()
                                      .Name("bitnet_prefix_cache_queries_total")
                                      .Help("prompt tokens of sequences that looked up the "
                                            "prefix cache")
                                      .Register(*reg)
                                      .Add({});
    pm::Counter& prefix_hits = pm::BuildCounter()
                                   .Name("bitnet_prefix_cache_hits_total")
                                   .Help("prompt tokens served from the prefix cache")
                                   .Register(*reg)
                                   .Add({});
    pm::Counter& prompt_computed = pm::BuildCounter()
                                       .Name("bitnet_prompt_tokens_computed_total")
                                       .Help("prompt positions the forward pass computed "
                                             "(prefill work, after the prefix cache)")
                                       .Register(*reg)
                                       .Add({});
    // Speculative decoding, from the same cumulative figures: draft tokens verified and accepted,
    // by where the drafts came from.
    pm::Family<pm::Counter>& spec_drafted_family =
        pm::BuildCounter()
            .Name("bitnet_spec_draft_tokens_total")
            .Help("speculative decoding: draft tokens verified, by source")
            .Register(*reg);
    pm::Counter& spec_drafted_ngram = spec_drafted_family.Add({{"source", "ngram"}});
    pm::Counter& spec_drafted_grammar = spec_drafted_family.Add({{"source", "grammar"}});
    pm::Counter& spec_drafted_model = spec_drafted_family.Add({{"source", "draft_model"}});
    pm::Family<pm::Counter>& spec_accepted_family =
        pm::BuildCounter()
            .Name("bitnet_spec_accepted_tokens_total")
            .Help("speculative decoding: draft tokens accepted (each a token without a pass of "
                  "its own), by source")
            .Register(*reg);
    pm::Counter& spec_accepted_ngram = spec_accepted_family.Add({{"source", "ngram"}});
    pm::Counter& spec_accepted_grammar = spec_accepted_family.Add({{"source", "grammar"}});
    pm::Counter& spec_accepted_model = spec_accepted_family.Add({{"source", "draft_model"}});
    // The greedy screen (greedy_screen setting): tokens chosen without the whole logits product.
    pm::Counter& greedy_screened = pm::BuildCounter()
                                       .Name("bitnet_greedy_screened_tokens_total")
                                       .Help("greedy tokens chosen by the exact greedy screen "
                                             "instead of the whole logits product")
                                       .Register(*reg)
                                       .Add({});
    std::mutex prefix_mu;
    std::map<std::string, std::array<std::uint64_t, 10>> prefix_seen; ///< model+version -> last
    std::string node; ///< this node's name, the `node` label of the cluster series
    pm::Counter& spans_dropped =
        pm::BuildCounter()
            .Name("bitnet_trace_spans_dropped_total")
            .Help("trace spans lost: the export queue was full, or the OTLP endpoint refused or "
                  "did not answer an export after its retries")
            .Register(*reg)
            .Add({});
    pm::Counter& spans_exported = pm::BuildCounter()
                                      .Name("bitnet_trace_spans_exported_total")
                                      .Help("trace spans the OTLP endpoint accepted")
                                      .Register(*reg)
                                      .Add({});
    std::mutex trace_mu;
    std::uint64_t trace_seen_dropped = 0, trace_seen_exported = 0;
    pm::Counter& tls_handshake_failures =
        pm::BuildCounter()
            .Name("bitnet_tls_handshake_failures_total")
            .Help("TLS hellos on the HTTPS listener whose handshake failed")
            .Register(*reg)
            .Add({});
    pm::Family<pm::Counter>& tls_reloads =
        pm::BuildCounter()
            .Name("bitnet_tls_reloads_total")
            .Help("re-reads of the HTTPS certificate and key (SIGHUP), by result")
            .Register(*reg);
    // vLLM-compatible aliases, so existing dashboards and autoscalers work unchanged.
    pm::Gauge& v_running = pm::BuildGauge()
                               .Name("vllm:num_requests_running")
                               .Help("alias of bitnet_requests_running")
                               .Register(*reg)
                               .Add({});
    pm::Gauge& v_waiting = pm::BuildGauge()
                               .Name("vllm:num_requests_waiting")
                               .Help("alias of sum(bitnet_requests_waiting)")
                               .Register(*reg)
                               .Add({});
    pm::Gauge& v_kv = pm::BuildGauge()
                          .Name("vllm:kv_cache_usage_perc")
                          .Help("alias of bitnet_kv_cache_usage_ratio")
                          .Register(*reg)
                          .Add({});
    pm::Histogram& v_ttft = pm::BuildHistogram()
                                .Name("vllm:time_to_first_token_seconds")
                                .Help("alias of bitnet_time_to_first_token_seconds")
                                .Register(*reg)
                                .Add({}, k_latency);
    pm::Histogram& v_e2e = pm::BuildHistogram()
                               .Name("vllm:e2e_request_latency_seconds")
                               .Help("alias of bitnet_request_duration_seconds")
                               .Register(*reg)
                               .Add({}, k_latency);
    pm::Gauge& v_prefix_rate = pm::BuildGauge()
                                   .Name("vllm:gpu_prefix_cache_hit_rate")
                                   .Help("bitnet_prefix_cache_hits_total / "
                                         "bitnet_prefix_cache_queries_total since start")
                                   .Register(*reg)
                                   .Add({});
};

metrics::metrics()
    : impl_(std::make_unique<impl>()) {
    for (const char* p : {"high", "normal", "low"})
        impl_->waiting.Add({{"priority", p}}).Set(0);
    // A family without children is not exposed: create the swap results at zero.
    impl_->swaps.Add({{"result", "success"}});
    impl_->swaps.Add({{"result", "rollback"}});
    impl_->swaps.Add({{"result", "failed"}});
    // The admission refusals a scrape may see before any happened (alerts select them).
    for (const char* r : {"queue_full", "draining", "quota"}) {
        impl_->rejections.Add({{"reason", r}});
        impl_->rejects[r] = 0;
    }
}

void metrics::build_info(const std::string& version, const std::string& git_sha) {
    impl_->build.Add({{"version", version}, {"git_sha", git_sha}}).Set(1);
}

metrics::~metrics() = default;

void metrics::request_done(const std::string& route, unsigned status, double seconds) {
    impl_->requests.Add({{"route", route}, {"status", std::to_string(status)}}).Increment();
    if (status < 400) {
        impl_->duration.Observe(seconds);
        impl_->v_e2e.Observe(seconds);
    }
}

void metrics::completion(const msg::completion& c) {
    impl_->prompt_tokens.Increment(c.prompt_tokens);
    impl_->generated_tokens.Increment(c.completion_tokens);
    impl_->queue_time.Observe(static_cast<double>(c.queue_us) / 1e6);
    if (c.completion_tokens > 0) {
        impl_->ttft.Observe(static_cast<double>(c.ttft_us) / 1e6);
        impl_->v_ttft.Observe(static_cast<double>(c.ttft_us) / 1e6);
    }
}

void metrics::step(std::uint32_t n_seqs, double seconds) {
    impl_->batch_size.Observe(n_seqs);
    impl_->step_duration.Observe(seconds);
    std::lock_guard lk(impl_->mu);
    if (impl_->batch_counts.size() <= n_seqs)
        impl_->batch_counts.resize(n_seqs + 1);
    ++impl_->batch_counts[n_seqs];
    impl_->batch_sum += n_seqs;
}

void metrics::prompt_processed(std::uint32_t n) {
    std::lock_guard lk(impl_->mu);
    impl_->prompt_rate.add(n, rate_window::clock::now());
}

void metrics::token_generated() {
    std::lock_guard lk(impl_->mu);
    impl_->generated_rate.add(1, rate_window::clock::now());
}

live_stats metrics::live() const {
    live_stats out;
    std::lock_guard lk(impl_->mu);
    const auto& counts = impl_->batch_counts;
    for (auto c : counts)
        out.steps += c;
    if (out.steps > 0) {
        out.batch_mean = static_cast<double>(impl_->batch_sum) / static_cast<double>(out.steps);
        // Nearest-rank percentiles over the exact per-size counts.
        auto rank = [&](double q) {
            const auto want = static_cast<std::uint64_t>(std::ceil(q * out.steps));
            std::uint64_t seen = 0;
            for (std::size_t n = 0; n < counts.size(); ++n)
                if ((seen += counts[n]) >= want)
                    return static_cast<std::uint32_t>(n);
            return static_cast<std::uint32_t>(counts.size() - 1);
        };
        out.batch_p50 = rank(0.50);
        out.batch_p90 = rank(0.90);
        out.batch_p99 = rank(0.99);
        out.batch_max = static_cast<std::uint32_t>(counts.size() - 1);
    }
    const auto now = rate_window::clock::now();
    out.prompt_tps_10s = impl_->prompt_rate.per_second(10, now);
    out.prompt_tps_60s = impl_->prompt_rate.per_second(60, now);
    out.generated_tps_10s = impl_->generated_rate.per_second(10, now);
    out.generated_tps_60s = impl_->generated_rate.per_second(60, now);
    out.rejects = impl_->rejects;
    return out;
}

void metrics::inter_token(double seconds) {
    impl_->itl.Observe(seconds);
}

void metrics::rejected(const std::string& reason) {
    impl_->rejections.Add({{"reason", reason}}).Increment();
    std::lock_guard lk(impl_->mu);
    ++impl_->rejects[reason];
}

void metrics::queues(const std::vector<msg::batcher_stats>& stats) {
    double running = 0, used = 0, total = 0;
    std::array<double, 3> waiting{};
    for (const auto& s : stats) {
        running += s.running;
        used += s.kv_blocks_used;
        total += s.kv_blocks_total;
        for (std::size_t p = 0; p < 3; ++p)
            waiting[p] += s.waiting[p];
    }
    impl_->running.Set(running);
    impl_->v_running.Set(running);
    const char* names[] = {"high", "normal", "low"};
    for (std::size_t p = 0; p < 3; ++p)
        impl_->waiting.Add({{"priority", names[p]}}).Set(waiting[p]);
    impl_->v_waiting.Set(waiting[0] + waiting[1] + waiting[2]);
    const double ratio = total > 0 ? used / total : 0.0;
    impl_->kv_usage.Set(ratio);
    impl_->v_kv.Set(ratio);
    prefix_counts(stats);
}

void metrics::memory(const std::vector<bitnet::memory::table_figures>& tables) {
    for (const auto& t : tables) {
        impl_->table_bytes.Add({{"table", t.name}}).Set(static_cast<double>(t.bytes));
        impl_->table_budget.Add({{"table", t.name}}).Set(static_cast<double>(t.budget_bytes));
        impl_->table_entries.Add({{"table", t.name}}).Set(static_cast<double>(t.entries));
    }
    for (std::size_t k = 0; k < bitnet::memory::live_kinds; ++k) {
        const auto kind = static_cast<bitnet::memory::live_kind>(k);
        impl_->live_objects.Add({{"kind", bitnet::memory::live_kind_name(kind)}})
            .Set(static_cast<double>(bitnet::memory::live_count(kind)));
    }
}

void metrics::connections_open(std::size_t n) {
    impl_->connections_open.Set(static_cast<double>(n));
}

void metrics::connection_reclaimed() {
    impl_->connections_reclaimed.Increment();
}

void metrics::accept_failed() {
    impl_->accept_failures.Increment();
}

void metrics::prefix_counts(const std::vector<msg::batcher_stats>& stats) {
    std::lock_guard lk(impl_->prefix_mu);
    for (const auto& s : stats) {
        auto& seen = impl_->prefix_seen[s.model + '\n' + s.model_version];
        // Drafts by source: the totals less the schema's and the draft model's are the n-grams'.
        const std::array<std::uint64_t, 10> now{
            s.prefix_query_tokens,
            s.prefix_hit_tokens,
            s.prompt_tokens_computed,
            s.spec_drafted_tokens - s.spec_grammar_drafted_tokens - s.spec_model_drafted_tokens,
            s.spec_accepted_tokens - s.spec_grammar_accepted_tokens - s.spec_model_accepted_tokens,
            s.spec_grammar_drafted_tokens,
            s.spec_grammar_accepted_tokens,
            s.spec_model_drafted_tokens,
            s.spec_model_accepted_tokens,
            s.greedy_screened_tokens};
        // Figures only grow within a version; a smaller one is a restarted batcher: all new.
        auto delta = [&](std::size_t i) {
            return static_cast<double>(now[i] >= seen[i] ? now[i] - seen[i] : now[i]);
        };
        impl_->prefix_queries.Increment(delta(0));
        impl_->prefix_hits.Increment(delta(1));
        impl_->prompt_computed.Increment(delta(2));
        impl_->spec_drafted_ngram.Increment(delta(3));
        impl_->spec_accepted_ngram.Increment(delta(4));
        impl_->spec_drafted_grammar.Increment(delta(5));
        impl_->spec_accepted_grammar.Increment(delta(6));
        impl_->spec_drafted_model.Increment(delta(7));
        impl_->spec_accepted_model.Increment(delta(8));
        impl_->greedy_screened.Increment(delta(9));
        seen = now;
    }
    const double q = impl_->prefix_queries.Value();
    impl_->v_prefix_rate.Set(q > 0 ? impl_->prefix_hits.Value() / q : 0.0);
}

void metrics::model_info(const std::vector<std::array<std::string, 4>>& served) {
    std::lock_guard lock(impl_->model_info_mutex);
    std::map<std::array<std::string, 4>, pm::Gauge*> now;
    for (const auto& s : served) {
        auto& g = impl_->model_info.Add(
            {{"alias", s[0]}, {"version", s[1]}, {"format", s[2]}, {"device", s[3]}});
        g.Set(1);
        now[s] = &g;
    }
    for (const auto& [labels, g] : impl_->model_info_series)
        if (!now.count(labels))
            impl_->model_info.Remove(g);
    impl_->model_info_series = std::move(now);
}

void metrics::cluster_node(const std::string& node) {
    impl_->node = node;
    for (const char* s : {"up", "suspect", "down"})
        impl_->cluster_nodes.Add({{"node", node}, {"state", s}}).Set(s[0] == 'u' ? 1 : 0);
    impl_->migrated.Add({{"node", node}});
    impl_->dial_failures.Add({{"node", node}});
    for (const char* r : {"proof", "name_taken", "tls", "basp", "order", "placement"})
        impl_->cluster_refusals.Add({{"node", node}, {"reason", r}});
}

void metrics::cluster_nodes(std::uint32_t up, std::uint32_t suspect, std::uint32_t down) {
    const auto& n = impl_->node;
    impl_->cluster_nodes.Add({{"node", n}, {"state", "up"}}).Set(up);
    impl_->cluster_nodes.Add({{"node", n}, {"state", "suspect"}}).Set(suspect);
    impl_->cluster_nodes.Add({{"node", n}, {"state", "down"}}).Set(down);
}

void metrics::migrated() {
    impl_->migrated.Add({{"node", impl_->node}}).Increment();
}

void metrics::link(const std::string& peer, const std::string& direction, const std::string& kind,
                   std::uint64_t bytes) {
    const std::map<std::string, std::string> labels{
        {"node", impl_->node}, {"peer", peer}, {"direction", direction}, {"kind", kind}};
    impl_->link_messages.Add(labels).Increment();
    impl_->link_bytes.Add(labels).Increment(static_cast<double>(bytes));
}

void metrics::heartbeat_gap(const std::string& peer, double seconds) {
    static const pm::Histogram::BucketBoundaries k_gaps{0.05,  0.1,  0.2, 0.25, 0.3, 0.375, 0.5,
                                                        0.625, 0.75, 1.0, 1.5,  2.5, 5.0};
    impl_->heartbeat_gaps.Add({{"node", impl_->node}, {"peer", peer}}, k_gaps).Observe(seconds);
}

void metrics::suspect(const std::string& peer) {
    impl_->suspects.Add({{"node", impl_->node}, {"peer", peer}}).Increment();
}

void metrics::down(const std::string& peer) {
    impl_->downs.Add({{"node", impl_->node}, {"peer", peer}}).Increment();
}

void metrics::dial_failed() {
    impl_->dial_failures.Add({{"node", impl_->node}}).Increment();
}

void metrics::cluster_refused(const std::string& reason) {
    impl_->cluster_refusals.Add({{"node", impl_->node}, {"reason", reason}}).Increment();
}

void metrics::swap(const std::string& result) {
    impl_->swaps.Add({{"result", result}}).Increment();
}

void metrics::device_fallback(const std::string& alias, const std::string& from,
                              const std::string& to, const std::string& reason) {
    impl_->device_fallbacks.Add({{"alias", alias}, {"from", from}, {"to", to}, {"reason", reason}})
        .Increment();
}

void metrics::executor_stall(const std::string& alias) {
    impl_->stalls.Add({{"alias", alias}}).Increment();
}

void metrics::tls_handshake_failed() {
    impl_->tls_handshake_failures.Increment();
}

void metrics::tls_reload(bool ok) {
    impl_->tls_reloads.Add({{"result", ok ? "ok" : "failed"}}).Increment();
}

std::string metrics::render() const {
    {
        // The recorder counts on its own (no metrics object in common/): carry its growth over.
        const auto& rec = trace::recorder::process();
        std::lock_guard lk(impl_->trace_mu);
        const auto d = rec.dropped();
        const auto e = rec.exported();
        impl_->spans_dropped.Increment(static_cast<double>(d - impl_->trace_seen_dropped));
        impl_->spans_exported.Increment(static_cast<double>(e - impl_->trace_seen_exported));
        impl_->trace_seen_dropped = d;
        impl_->trace_seen_exported = e;
    }
    return pm::TextSerializer{}.Serialize(impl_->reg->Collect());
}

} // namespace bitnet::http
