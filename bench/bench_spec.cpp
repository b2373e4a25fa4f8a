// Speculative decoding figures for bench/RESULTS.md (issue 28):
//   - verification cost: the time of a step that verifies k draft tokens (the sequence's last
//     token plus k drafts, every position computed as a decode, every logits row returned, the
//     drafts then dropped) over a plain one-token decode step, k = 1..8, at a given context,
//     beside its compute floor: the ratio if each extra row cost only its multiply-accumulates
//     at this machine's int8 and fp32 FMA peaks measured in the same run (ceilings.hpp);
//   - single-stream tokens/s with and without drafts through the real batching policy
//     (sched::policy: its n-gram drafter, its draft-length backoff) and the real engine, for:
//       copy    the prompt holds a document and the output quotes it (teacher-forced: each
//               token is the document's next one, so random weights do not decide whether the
//               model copies; the drafts and their verification are real);
//       miss    drafts are proposed at every third token and are always wrong (the output
//               repeats "A B" then a fresh token, so "A B" recurs with another follower);
//       greedy  the model's own argmax on a random prompt (what random weights do by themselves);
//       schema  the model's own argmax under a JSON Schema of long fixed keys and enum members:
//               the bytes the schema forces are drafted (jump-forward), the rest is the model's;
//   and for each the draft tokens verified and accepted;
//   - with --draft-model: the time a draft model takes to propose k tokens for one sequence (a
//     pass over the confirmed tokens, then one pass per further draft, as the executor does),
//     over the served model's decode step, and from it and the verification cost the tokens/s
//     ratio a given acceptance rate would give (random weights accept nothing, so the ratio at
//     measured acceptance is not a figure here).
//   - with --greedy-screen: the verification cost again with greedy-only rows (the engine's
//     greedy screen answering each row, every row screened), alternating with the plain steps.
// A teacher-forced step still computes every logits row a real one does; only the choice of
// token is the teacher's. Each figure is the median of --repeats runs. Usage:
//   bench_spec -m MODEL [--threads 2] [--doc 1000] [--gen 256] [--max-draft 8]
//              [--context 512] [--repeats 3] [--only verify|copy|miss|greedy|schema|draft]
//              [--draft-model FILE] [--q8-logits] [--greedy-screen]
#include "actors/batcher/sched_policy.hpp"
#include "bench_timing.hpp"
#include "ceilings.hpp"
#include "model/constrain/token_constraint.hpp"
#include "model/engine/engine.hpp"
#include "model/engine/model_config.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace bitnet;
using bench::clock_type;
using bench::median;
using bench::seconds_since;

std::vector<std::int32_t> random_tokens(std::size_t n, std::uint32_t n_vocab,
                                        std::mt19937_64& rng) {
    std::vector<std::int32_t> t(n);
    for (auto& x : t)
        x = static_cast<std::int32_t>(rng() % (n_vocab - 300)); // below any control ids
    return t;
}

void must(bool ok, const std::string& what) {
    bench::must(ok, "bench_spec", what);
}

/// Seconds per step verifying k drafts (k = 0: a plain decode) at context `context`, for each
/// of `greedy_only` (whether the chunk takes only each row's greedy token: the greedy screen's
/// rows on an engine that keeps one), the modes' runs alternating so drift falls on all.
std::vector<std::vector<double>> verify_cost(model::engine& e, std::uint32_t context,
                                             std::uint32_t max_k, int repeats,
                                             const std::vector<bool>& greedy_only = {false}) {
    std::mt19937_64 rng(7);
    const auto n_vocab = e.config().n_vocab;
    const auto prompt = random_tokens(context, n_vocab, rng);
    model::seq_chunk pre{1, prompt, 0, false};
    must(static_cast<bool>(e.step(std::span<const model::seq_chunk>(&pre, 1))), "prefill failed");
    std::vector<std::vector<double>> out(greedy_only.size());
    for (std::uint32_t k = 0; k <= max_k; ++k) {
        std::vector<std::vector<double>> runs(greedy_only.size());
        for (int r = 0; r < repeats * 8; ++r)
            for (std::size_t m = 0; m < greedy_only.size(); ++m) {
                model::seq_chunk c{1, random_tokens(k + 1, n_vocab, rng), context, true, context};
                c.all_logits = k > 0;
                c.greedy_only = greedy_only[m];
                const auto t0 = clock_type::now();
                auto so = e.step(std::span<const model::seq_chunk>(&c, 1));
                runs[m].push_back(seconds_since(t0));
                must(static_cast<bool>(so), "verify step failed");
                must(so->screened_rows == (greedy_only[m] ? k + 1 : 0),
                     "the greedy screen did not answer the greedy-only rows");
                must(static_cast<bool>(e.truncate(1, k + 1)), "truncate failed");
            }
        for (std::size_t m = 0; m < greedy_only.size(); ++m)
            out[m].push_back(median(runs[m]));
    }
    e.release(1);
    return out;
}

/// The least time one more verified row can add to a step: its ternary multiply-accumulates at the
/// int8 peak, its logits row at the fp32 FMA peak (at the int8 peak with Q8_0 logits), and its
/// attention over `context` positions (q·k and p·v, one FMA per head dimension each) at the FMA
/// peak; norms, activations, quantization and memory traffic are left out, so no kernel reaches
/// it. On a bandwidth-bound decode step this is what the verification ratio cannot go below.
double extra_row_floor_seconds(const model::model_config& c, std::uint32_t context, bool q8_logits,
                               int threads) {
    const auto int8 = bench::int8_mac_peak(threads);
    const auto fp32 = bench::fp32_fma_peak(threads);
    const double logits = static_cast<double>(c.n_vocab) * c.n_embd;
    const double ternary = static_cast<double>(model::parameter_count(c)) - logits;
    const double attention = 2.0 * c.n_layer * c.n_embd * context;
    std::printf("ceilings: %s %.1f GMAC/s, %s %.1f GFLOP/s (%d threads)\n",
                int8.instruction.c_str(), int8.per_s / 1e9, fp32.instruction.c_str(),
                fp32.per_s / 1e9, threads);
    return ternary / int8.per_s + (q8_logits ? logits / int8.per_s : 2 * logits / fp32.per_s) +
           2 * attention / fp32.per_s;
}

struct gen_result {
    double seconds = 0;
    std::uint32_t tokens = 0;
    std::uint64_t steps = 0;
    std::uint64_t drafted = 0;
    std::uint64_t accepted = 0;
};

/// `pick(row, n_generated)` chooses each token (a teacher, or argmax of the row).
using picker = std::function<std::int32_t(std::span<const float>, std::uint32_t)>;

/// One request of `gen` tokens through the policy and the engine, verifying drafts as the
/// executor does (pick row after row while the pick equals the next draft, drop the rest).
/// `schema`, when given, is the request's (its forced bytes are drafted).
gen_result generate(model::engine& e, const std::vector<std::int32_t>& prompt, std::uint32_t gen,
                    std::uint32_t max_draft, const picker& pick,
                    std::shared_ptr<const model::constrain::compiled_constraint> schema = {}) {
    sched::policy_config cfg;
    cfg.kv_block_tokens = e.kv_block_tokens();
    cfg.kv_blocks_total = e.kv_blocks_free();
    cfg.n_ctx = e.config().n_ctx_train;
    cfg.spec_max_draft = max_draft;
    const auto eog = e.vocab().eog_ids();
    cfg.eog_ids.assign(eog.begin(), eog.end());
    sched::policy pol(cfg);
    sched::seq_request r;
    r.id = 1;
    r.prompt = prompt;
    r.max_tokens = gen;
    r.speculate = max_draft > 0;
    r.schema = std::move(schema);
    must(static_cast<bool>(pol.add(r, sched::clock::now())), "policy refused the request");
    const auto n_vocab = e.config().n_vocab;
    gen_result res;
    const auto t0 = clock_type::now();
    while (pol.has_unfinished()) {
        auto plan = pol.schedule(sched::clock::now());
        for (auto id : plan.release)
            e.release(id);
        std::vector<model::seq_chunk> chunks;
        for (const auto& c : plan.chunks)
            chunks.push_back(c.part);
        auto so = e.step(chunks);
        must(static_cast<bool>(so), "step failed: " + (so ? std::string() : so.error().message));
        std::vector<sched::sample> samples;
        for (std::size_t i = 0; i < plan.chunks.size(); ++i) {
            const auto& c = plan.chunks[i];
            if (c.n_draft == 0) {
                if (c.part.want_logits)
                    samples.push_back({c.part.seq,
                                       pick(so->row(so->rows_for_chunk[i], n_vocab), res.tokens),
                                       0.0f});
                continue;
            }
            std::uint32_t accepted = 0;
            for (std::uint32_t j = 0; j <= c.n_draft; ++j) {
                const auto t = pick(so->row(so->first_row_for_chunk[i] + j, n_vocab),
                                    res.tokens + static_cast<std::uint32_t>(samples.size()));
                samples.push_back({c.part.seq, t, 0.0f});
                if (j == c.n_draft || t != c.part.tokens[j + 1])
                    break;
                ++accepted;
            }
            must(static_cast<bool>(e.truncate(c.part.seq, c.n_draft - accepted)),
                 "truncate failed");
        }
        auto out = pol.update_from_output(plan, samples, sched::clock::now());
        res.tokens += static_cast<std::uint32_t>(out.tokens.size());
        ++res.steps;
    }
    res.seconds = seconds_since(t0);
    const auto st = pol.stats();
    res.drafted = st.spec_drafted;
    res.accepted = st.spec_accepted;
    e.release(1);
    return res;
}

std::int32_t argmax(std::span<const float> row) {
    return static_cast<std::int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

/// Seconds for draft model `d` to propose k tokens for one sequence at context `context` (its
/// KV holding the sequence's confirmed tokens but the last two: the tokens of one accepted draft
/// and the new sample), k = 1..max_k; and the same proposal's positions dropped after.
std::vector<double> draft_cost(model::engine& d, std::uint32_t context, std::uint32_t max_k,
                               int repeats) {
    std::mt19937_64 rng(9);
    const auto n_vocab = d.config().n_vocab;
    const auto prompt = random_tokens(context - 2, n_vocab, rng);
    model::seq_chunk pre{1, prompt, 0, false};
    must(static_cast<bool>(d.step(std::span<const model::seq_chunk>(&pre, 1))), "draft prefill");
    std::vector<double> out;
    for (std::uint32_t k = 1; k <= max_k; ++k) {
        std::vector<double> runs;
        for (int r = 0; r < repeats * 4; ++r) {
            const auto t0 = clock_type::now();
            model::seq_chunk c{1, random_tokens(2, n_vocab, rng), context - 2, true};
            std::uint32_t pos = context;
            for (std::uint32_t j = 0; j < k; ++j) {
                auto so = d.step(std::span<const model::seq_chunk>(&c, 1));
                must(static_cast<bool>(so), "draft step failed");
                const auto t = argmax(so->row(so->rows_for_chunk[0], n_vocab));
                c = model::seq_chunk{1, {t}, pos++, true};
            }
            runs.push_back(seconds_since(t0));
            // Back to the confirmed tokens: the two fed and the k - 1 drafts computed.
            must(static_cast<bool>(d.truncate(1, k + 1)), "draft truncate failed");
        }
        out.push_back(median(runs));
    }
    d.release(1);
    return out;
}

/// Median tokens/s (decode only: the prompt's prefill is timed apart and taken out) with and
/// without drafts, and the drafted/accepted counts of the last run with drafts.
void compare(const char* name, model::engine& e, const std::vector<std::int32_t>& prompt,
             std::uint32_t gen, std::uint32_t max_draft, const picker& pick, int repeats,
             const std::shared_ptr<const model::constrain::compiled_constraint>& schema = {}) {
    std::vector<double> off, on;
    gen_result last{};
    // The prefill alone (max_tokens 1), to subtract from both.
    std::vector<double> pre;
    for (int r = 0; r < repeats; ++r)
        pre.push_back(generate(e, prompt, 1, 0, pick, schema).seconds);
    const double prefill = median(pre);
    for (int r = 0; r < repeats; ++r) {
        const auto a = generate(e, prompt, gen, 0, pick, schema);
        off.push_back((a.tokens - 1) / std::max(a.seconds - prefill, 1e-9));
        last = generate(e, prompt, gen, max_draft, pick, schema);
        must(last.tokens == a.tokens, "drafts changed the number of tokens");
        on.push_back((last.tokens - 1) / std::max(last.seconds - prefill, 1e-9));
    }
    const double m_off = median(off), m_on = median(on);
    std::printf("%-6s  %4u tokens  off %7.2f tok/s  on %7.2f tok/s  ratio %.3f  steps %llu  "
                "drafted %llu  accepted %llu (%.0f%%)\n",
                name, gen, m_off, m_on, m_on / m_off, static_cast<unsigned long long>(last.steps),
                static_cast<unsigned long long>(last.drafted),
                static_cast<unsigned long long>(last.accepted),
                last.drafted
                    ? 100.0 * static_cast<double>(last.accepted) / static_cast<double>(last.drafted)
                    : 0.0);
    std::fflush(stdout);
}

/// The command line of bench_spec.
struct spec_args {
    std::string model_path, only, draft_path;
    int threads = 2, repeats = 3;
    std::uint32_t doc = 1000, gen = 256, max_draft = 8, context = 512;
    bool q8_logits = false;
    bool greedy_screen = false;
    /// Whether the part `name` runs (--only names one; none: all of them).
    [[nodiscard]] bool runs(const char* name) const { return only.empty() || only == name; }
};

void add_options(CLI::App& app, spec_args& a) {
    app.add_option("-m,--model", a.model_path)->required();
    app.add_option("--threads", a.threads);
    app.add_option("--doc", a.doc, "tokens of the quoted document (copy)");
    app.add_option("--gen", a.gen, "tokens generated per run");
    app.add_option("--max-draft", a.max_draft,
                   "spec_max_draft, and the largest k of the cost table");
    app.add_option("--context", a.context, "positions in the KV cache for the cost table");
    app.add_option("--repeats", a.repeats);
    app.add_option("--only", a.only, "verify, copy, miss, greedy, schema or draft");
    app.add_option("--draft-model", a.draft_path, "a draft model (same vocabulary) to time");
    app.add_flag("--q8-logits", a.q8_logits, "the served model's opt-in Q8_0 block logits");
    app.add_flag("--greedy-screen", a.greedy_screen,
                 "keep the greedy screen and time verification steps with greedy-only rows too");
}

/// The verification cost table: a step with k drafts against a decode step. Returns the median
/// step seconds by k.
std::vector<double> print_verify_cost(model::engine& e, const spec_args& a) {
    const std::uint32_t context = a.context, max_draft = a.max_draft;
    const int repeats = a.repeats, threads = a.threads;
    const bool greedy_screen = a.greedy_screen, q8_logits = a.q8_logits;
    std::vector<double> cost;
    const auto costs =
        verify_cost(e, context, max_draft, repeats,
                    greedy_screen ? std::vector<bool>{false, true} : std::vector<bool>{false});
    cost = costs[0];
    const double row_s = extra_row_floor_seconds(e.config(), context, q8_logits, threads);
    std::printf("verification cost at context %u (median step ms, ratio to a decode step, "
                "and the ratio's compute floor: %.2f ms an extra row at the peaks):\n",
                context, row_s * 1e3);
    for (std::size_t k = 0; k < cost.size(); ++k)
        std::printf("  k=%zu  %8.2f ms  %.3f  floor %.3f\n", k, cost[k] * 1e3, cost[k] / cost[0],
                    1 + static_cast<double>(k) * row_s / cost[0]);
    if (greedy_screen) {
        const auto& g = costs[1];
        std::printf("greedy-only rows from the screen, alternating with the above (median step "
                    "ms, ratio to the plain decode step, to the greedy-only decode step, and "
                    "the plain step's time over this one):\n");
        for (std::size_t k = 0; k < g.size(); ++k)
            std::printf("  k=%zu  %8.2f ms  %.3f  %.3f  speedup %.3f\n", k, g[k] * 1e3,
                        g[k] / cost[0], g[k] / g[0], cost[k] / g[k]);
    }
    std::fflush(stdout);
    return cost;
}

/// A draft model's proposal cost, and the tokens/s ratio it gives at several acceptance rates.
void print_draft_cost(const model::engine_options& opt, const spec_args& a,
                      const std::vector<double>& cost, std::uint32_t n_vocab) {
    const std::string& draft_path = a.draft_path;
    const std::uint32_t context = a.context, max_draft = a.max_draft;
    const int repeats = a.repeats;
    model::engine_options dopt = opt;
    dopt.model_path = draft_path;
    dopt.kv_budget_bytes = 256ull << 20;
    dopt.q8_logits = true; // as the executor loads a draft model
    auto dl = model::engine::load(dopt);
    must(static_cast<bool>(dl), dl ? "" : dl.error().to_string());
    must((*dl)->config().n_vocab == n_vocab, "the draft model's vocabulary differs");
    std::printf("draft model %s: %s\n", draft_path.c_str(), (*dl)->describe().c_str());
    const auto dc = draft_cost(**dl, context, max_draft, repeats);
    // A step with k drafts yields 1 + (accepted drafts) tokens; with each draft accepted at
    // rate a (independently, in order) that is (1 - a^(k+1)) / (1 - a) on average, and it
    // costs the draft model's proposal plus the verification step.
    std::printf("draft proposal of k tokens (median ms, ratio to a decode step), and the "
                "tokens/s ratio at acceptance a:\n");
    std::printf("  k   draft ms  ratio   a=0.5   a=0.7   a=0.8   a=0.9   break-even a\n");
    for (std::size_t k = 1; k <= dc.size() && k < cost.size(); ++k) {
        const double step = (cost[k] + dc[k - 1]) / cost[0];
        auto gain = [&](double acc) { return (1 - std::pow(acc, k + 1.0)) / (1 - acc) / step; };
        double lo = 0, hi = 0.999;
        for (int it = 0; it < 60; ++it) {
            const double mid = (lo + hi) / 2;
            (gain(mid) < 1 ? lo : hi) = mid;
        }
        std::printf("  %zu  %8.2f  %6.3f  %6.3f  %6.3f  %6.3f  %6.3f   %.2f\n", k, dc[k - 1] * 1e3,
                    dc[k - 1] / cost[0], gain(0.5), gain(0.7), gain(0.8), gain(0.9),
                    gain(0.999) < 1 ? 1.0 : hi);
    }
    std::fflush(stdout);
}

/// Speculation on a long schema-constrained record: the masked argmax, drafts from the schema.
void run_schema_case(model::engine& e, const spec_args& a, std::mt19937_64& rng) {
    const auto n_vocab = e.config().n_vocab;
    const std::uint32_t gen = a.gen, max_draft = a.max_draft;
    const int repeats = a.repeats;
    // A record of long fixed names and enum members (keys in any order, so after each comma
    // the model picks a name by its first byte); the values that are free are short.
    const std::string text =
        R"({"type":"object","properties":{)"
        R"("customer_identification_number":{"type":"integer","minimum":0,"maximum":999},)"
        R"("preferred_method_of_contact":{"enum":["electronic_mail_message",)"
        R"("telephone_call_in_the_evening"]},)"
        R"("account_is_currently_active":{"type":"boolean"},)"
        R"("primary_shipping_address_line":{"type":"string","maxLength":12},)"
        R"("number_of_previous_orders_placed":{"type":"integer","minimum":0,"maximum":99},)"
        R"("subscribed_to_the_newsletter":{"type":"boolean"}},)"
        R"("required":["customer_identification_number","preferred_method_of_contact",)"
        R"("account_is_currently_active","primary_shipping_address_line",)"
        R"("number_of_previous_orders_placed","subscribed_to_the_newsletter"],)"
        R"("additionalProperties":false})";
    auto compiled = model::constrain::schema_cache::shared().get(text, e.vocab());
    must(static_cast<bool>(compiled), "the schema did not compile");
    const auto prompt = random_tokens(64, n_vocab, rng);
    // The masked argmax, its matcher following the tokens taken (a run starts at i = 0).
    std::optional<model::constrain::token_constraint> state;
    std::vector<float> masked;
    std::string json;
    const picker masked_argmax = [&](std::span<const float> row, std::uint32_t i) {
        if (i == 0) {
            state.emplace(*compiled);
            json.clear();
        }
        auto mask = state->allowed();
        must(static_cast<bool>(mask), "no mask");
        must(model::constrain::apply_mask(**mask, row, masked), "no token fits");
        const auto t = argmax(masked);
        must(state->accept(t), "the pick does not fit");
        json += e.vocab().token_to_piece(t, false);
        return t;
    };
    compare("schema", e, prompt, gen, max_draft, masked_argmax, repeats, *compiled);
    std::printf("  output: %s\n", json.c_str());
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"speculative decoding: verification cost and tokens/s with and without drafts"};
    spec_args args;
    add_options(app, args);
    CLI11_PARSE(app, argc, argv);
    const std::uint32_t doc = args.doc, gen = args.gen, max_draft = args.max_draft;
    const int repeats = args.repeats;

    model::engine_options opt;
    opt.model_path = args.model_path;
    opt.n_threads = args.threads;
    opt.q8_logits = args.q8_logits;
    opt.greedy_screen = args.greedy_screen;
    // Every verified row from the screen (not the count measured at load): the table shows
    // where it wins.
    opt.greedy_screen_rows = 64;
    opt.kv_budget_bytes = 1ull << 30;
    auto loaded = model::engine::load(opt);
    must(static_cast<bool>(loaded), loaded ? "" : loaded.error().to_string());
    auto& e = **loaded;
    std::printf("model %s: %s\n", args.model_path.c_str(), e.describe().c_str());
    const auto n_vocab = e.config().n_vocab;

    std::vector<double> cost;
    if (args.runs("verify") || args.only == "draft")
        cost = print_verify_cost(e, args);
    if (!args.draft_path.empty() && args.runs("draft"))
        print_draft_cost(opt, args, cost, n_vocab);
    std::mt19937_64 rng(11);
    if (args.runs("copy")) {
        // The document, then a short instruction; the output quotes the document from its start.
        auto document = random_tokens(doc, n_vocab, rng);
        auto prompt = document;
        const auto ask = random_tokens(8, n_vocab, rng);
        prompt.insert(prompt.end(), ask.begin(), ask.end());
        const std::uint32_t n = std::min(gen, doc);
        compare(
            "copy", e, prompt, n, max_draft,
            [&](std::span<const float>, std::uint32_t i) { return document[i % doc]; }, repeats);
    }
    if (args.runs("miss")) {
        const auto prompt = random_tokens(64, n_vocab, rng);
        const std::int32_t a = prompt[3], b = prompt[9];
        std::vector<std::int32_t> fresh = random_tokens(gen, n_vocab, rng);
        compare(
            "miss", e, prompt, gen, max_draft,
            [&](std::span<const float>, std::uint32_t i) {
                return i % 3 == 0 ? a : i % 3 == 1 ? b : fresh[i];
            },
            repeats);
    }
    if (args.runs("greedy")) {
        const auto prompt = random_tokens(64, n_vocab, rng);
        compare(
            "greedy", e, prompt, gen, max_draft,
            [](std::span<const float> row, std::uint32_t) { return argmax(row); }, repeats);
    }
    if (args.runs("schema"))
        run_schema_case(e, args, rng);
    return 0;
}
