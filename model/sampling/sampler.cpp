// Sampling pipeline, in the order sampler.hpp states (llama.cpp's default chain, temperature
// last, with OpenAI's and vLLM's logit shaping before it):
//   logit bias -> hold-backs -> repetition penalty -> presence/frequency penalties -> top-k ->
//   top-p -> min-p -> temperature -> draw.
// top-p and min-p therefore see the temperature-free probabilities, and temperature only reshapes
// what survived the filters. Greedy (temperature 0) is the argmax of the shaped logits; the
// filters cannot change it (each keeps the most likely token), so it skips them.
#include "model/sampling/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <unordered_set>

namespace bitnet::model {
namespace {

error bad_param(const char* name, const std::string& value, const char* range) {
    return error(errc::invalid_argument, std::string("sampling: ") + name + " = " + value +
                                             " is out of range (allowed: " + range + ")");
}

std::string str(float v) {
    return std::to_string(v);
}

// More likely first; on equal logits the lower id first, so every order-dependent choice
// (top-k cut, greedy, top-logprobs) is deterministic.
struct by_logit_desc {
    const float* z;
    bool operator()(std::int32_t a, std::int32_t b) const {
        return z[a] > z[b] || (z[a] == z[b] && a < b);
    }
};

// Step 2, logit_bias (OpenAI): added to the raw logits. Ids outside the row are skipped (the
// server refuses them against the vocabulary before a request runs).
void apply_logit_bias(const sampling_params& p, float* z, std::int32_t n_vocab) {
    for (const auto& e : p.logit_bias)
        if (e.token >= 0 && e.token < n_vocab)
            z[e.token] = z[e.token] + e.bias;
}

// Step 3, hold-backs: ignore_eos bans the end-of-generation ids outright; min_tokens bans them
// and the request's stop ids until that many tokens were generated.
void apply_hold_backs(const sampling_params& p, float* z, std::int32_t n_vocab,
                      std::size_t n_generated) {
    constexpr float never = -std::numeric_limits<float>::infinity();
    const bool too_short = n_generated < p.min_tokens;
    auto ban = [&](std::span<const std::int32_t> ids) {
        for (std::int32_t t : ids)
            if (t >= 0 && t < n_vocab)
                z[t] = never;
    };
    if (p.ignore_eos || too_short)
        ban(p.eog_ids);
    if (too_short)
        ban(p.stop_ids);
}

// Step 4. Repetition penalty, once per distinct token in the window (llama.cpp).
void apply_repetition_penalty(const sampling_params& p, float* z, std::int32_t n_vocab,
                              std::span<const std::int32_t> recent) {
    if (p.repetition_penalty == 1.0f || p.repeat_last_n == 0 || recent.empty())
        return;
    std::size_t window = recent.size();
    if (p.repeat_last_n > 0)
        window = std::min(window, static_cast<std::size_t>(p.repeat_last_n));
    std::unordered_set<std::int32_t> seen;
    for (std::int32_t t : recent.last(window)) {
        if (t < 0 || t >= n_vocab || !seen.insert(t).second)
            continue;
        z[t] = z[t] > 0.0f ? z[t] / p.repetition_penalty : z[t] * p.repetition_penalty;
    }
}

// Step 5, presence and frequency penalties (OpenAI) over the generated tokens: `counts` is
// scratch that ends up holding them sorted, so equal ids are runs.
void apply_openai_penalties(const sampling_params& p, float* z, std::int32_t n_vocab,
                            std::span<const std::int32_t> generated,
                            std::vector<std::int32_t>& counts) {
    if ((p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f) || generated.empty())
        return;
    counts.assign(generated.begin(), generated.end());
    std::sort(counts.begin(), counts.end());
    for (std::size_t i = 0; i < counts.size();) {
        std::size_t j = i;
        while (j < counts.size() && counts[j] == counts[i])
            ++j;
        const std::int32_t t = counts[i];
        if (t >= 0 && t < n_vocab)
            z[t] = z[t] - (p.frequency_penalty * static_cast<float>(j - i) + p.presence_penalty);
        i = j;
    }
}

// Whether a truncating filter is on: only then are the candidates sorted.
bool filters_on(const sampling_params& p) {
    return p.top_k > 0 || p.top_p < 1.0f || p.min_p > 0.0f;
}

// Step 8 (the filters, when filters_on): fills `order` with every id, most likely first as far as
// a filter needs the order, and returns how many of its first entries survive top-k, top-p and
// min-p.
std::size_t filter_candidates(const sampling_params& p, const float* z, std::int32_t n_vocab,
                              double z_max, std::vector<std::int32_t>& order) {
    // Candidates, most likely first.
    order.resize(static_cast<std::size_t>(n_vocab));
    for (std::int32_t i = 0; i < n_vocab; ++i)
        order[static_cast<std::size_t>(i)] = i;
    std::size_t n_keep = order.size();
    // top-k.
    if (p.top_k > 0)
        n_keep = std::min(n_keep, static_cast<std::size_t>(p.top_k));
    if (n_keep == order.size()) // top-p / min-p alone: introsort beats a full heap sort
        std::sort(order.begin(), order.end(), by_logit_desc{z});
    else
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_keep),
                          order.end(), by_logit_desc{z});

    // top-p over the survivors' renormalised probabilities; keep at least one token.
    if (p.top_p < 1.0f) {
        double mass = 0.0;
        for (std::size_t i = 0; i < n_keep; ++i)
            mass += exp_or_zero(static_cast<double>(z[order[i]]) - z_max);
        double cum = 0.0;
        for (std::size_t i = 0; i < n_keep; ++i) {
            cum += exp_or_zero(static_cast<double>(z[order[i]]) - z_max) / mass;
            if (cum >= p.top_p) {
                n_keep = i + 1;
                break;
            }
        }
    }

    // min-p: p_i >= min_p * p_max  <=>  z_i >= z_max + log(min_p). order[0] is the max.
    if (p.min_p > 0.0f) {
        const double threshold = static_cast<double>(z[order[0]]) + std::log(p.min_p);
        std::size_t i = 1;
        while (i < n_keep && static_cast<double>(z[order[i]]) >= threshold)
            ++i;
        n_keep = i;
    }
    return n_keep;
}

// Step 8 (the draw): temperature, then a draw from the softmax of the first n_keep candidates,
// candidate i being token id_of(i), with the uniform `u01`; returns the position picked, and in
// `total` the sum of the weights.
template <class IdOf>
std::size_t draw_candidate(const sampling_params& p, const float* z, double z_max, IdOf id_of,
                           std::size_t n_keep, std::vector<double>& weights, double u01,
                           double& total) {
    // Temperature, then a draw from the softmax of what is left.
    const double inv_t = 1.0 / p.temperature;
    total = 0.0;
    weights.resize(n_keep);
    for (std::size_t i = 0; i < n_keep; ++i) {
        weights[i] = exp_or_zero((static_cast<double>(z[id_of(i)]) - z_max) * inv_t);
        total += weights[i];
    }
    const double u = u01 * total;
    double cum = 0.0;
    std::size_t pick = n_keep - 1; // rounding can leave u just above the last partial sum
    for (std::size_t i = 0; i < n_keep; ++i) {
        cum += weights[i];
        if (u < cum) {
            pick = i;
            break;
        }
    }
    return pick;
}

} // namespace

result<void> validate(const sampling_params& p) {
    if (!std::isfinite(p.temperature) || p.temperature < 0.0f || p.temperature > 100.0f)
        return bad_param("temperature", str(p.temperature), "0 (greedy) to 100");
    if (p.top_k < 0)
        return bad_param("top_k", std::to_string(p.top_k), "0 (off) or more");
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
        return bad_param("top_p", str(p.top_p), "greater than 0, at most 1");
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
        return bad_param("min_p", str(p.min_p), "0 to 1");
    if (!(p.repetition_penalty > 0.0f && p.repetition_penalty <= 10.0f))
        return bad_param("repetition_penalty", str(p.repetition_penalty),
                         "greater than 0, at most 10 (1 = off)");
    if (p.repeat_last_n < -1)
        return bad_param("repeat_last_n", std::to_string(p.repeat_last_n),
                         "-1 (all), 0 (off) or more");
    if (p.n_logprobs < 0 || p.n_logprobs > sampling_params::max_logprobs)
        return bad_param("n_logprobs", std::to_string(p.n_logprobs), "0 to 20");
    constexpr float pen = sampling_params::max_openai_penalty;
    if (!(p.presence_penalty >= -pen && p.presence_penalty <= pen))
        return bad_param("presence_penalty", str(p.presence_penalty), "-2 to 2 (0 = off)");
    if (!(p.frequency_penalty >= -pen && p.frequency_penalty <= pen))
        return bad_param("frequency_penalty", str(p.frequency_penalty), "-2 to 2 (0 = off)");
    if (p.logit_bias.size() > sampling_params::max_logit_bias)
        return bad_param("logit_bias", std::to_string(p.logit_bias.size()) + " entries",
                         "at most 300 entries");
    for (std::size_t i = 0; i < p.logit_bias.size(); ++i) {
        const auto& e = p.logit_bias[i];
        if (e.token < 0 || (i > 0 && e.token <= p.logit_bias[i - 1].token))
            return bad_param("logit_bias", "token " + std::to_string(e.token),
                             "token ids >= 0, ascending, each once");
        if (!(e.bias >= -sampling_params::max_bias && e.bias <= sampling_params::max_bias))
            return bad_param("logit_bias", str(e.bias), "-100 to 100");
    }
    return {};
}

sampler::sampler(const sampling_params& p)
    : params_(p)
    , rng_(p.seed) {}

result<sampler> sampler::create(const sampling_params& p) {
    BITNET_TRY(validate(p));
    return sampler(p);
}

double sampler::next_uniform() {
    return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

void sampler::resume_after(std::uint64_t n_sampled) {
    if (params_.temperature != 0.0f)
        rng_.discard(n_sampled);
}

bool sampler::first_maximum_only() const noexcept {
    const auto& p = params_;
    return p.temperature == 0.0f && p.n_logprobs == 0 && !p.report_logprob && !p.shapes_logits();
}

result<sampled> sampler::sample(std::span<const float> logits, std::span<const std::int32_t> recent,
                                std::size_t n_generated) {
    const auto n_vocab = static_cast<std::int32_t>(logits.size());
    if (n_vocab == 0)
        return error(errc::invalid_argument, "sampling: empty logits row");
    work_.assign(logits.begin(), logits.end());
    float* z = work_.data();
    // Steps 2-5 of sampler.hpp. (A NaN logit stays NaN through them: log_normalizer refuses it.)
    apply_logit_bias(params_, z, n_vocab);
    apply_hold_backs(params_, z, n_vocab, n_generated);
    apply_repetition_penalty(params_, z, n_vocab, recent);
    const auto generated = recent.last(std::min(n_generated, recent.size()));
    apply_openai_penalties(params_, z, n_vocab, generated, counts_);

    // Log-softmax of the shaped, temperature-free logits: what we report (logprobs.hpp, the
    // same arithmetic as a prompt token's score). Its pass of exp over the row is paid only
    // where a logprob is delivered, and a draw at temperature 1 with no filter sums the same
    // terms in the same order, so it gives the normaliser's sum for free.
    const std::span<const float> row(z, static_cast<std::size_t>(n_vocab));
    const auto checked = checked_max(row);
    if (!checked)
        return checked.error();
    const float z_max = *checked;
    const bool report = params_.report_logprob || params_.n_logprobs > 0;
    std::optional<double> log_norm;
    auto normalizer = [&] {
        if (!log_norm)
            log_norm = log_normalizer_of_checked(row, z_max);
        return *log_norm;
    };

    sampled out;
    if (params_.n_logprobs > 0)
        top_logprobs(row, static_cast<std::size_t>(params_.n_logprobs), normalizer(), order_,
                     out.top_logprobs);

    if (params_.temperature == 0.0f) {
        // Greedy: first maximum = lowest id among equal logits.
        out.token = static_cast<std::int32_t>(std::max_element(z, z + n_vocab) - z);
        if (report)
            out.logprob = logprob_of(row, out.token, normalizer());
        return out;
    }

    double total = 0.0;
    if (filters_on(params_)) {
        const std::size_t n_keep = filter_candidates(params_, z, n_vocab, z_max, order_);
        const auto pick = draw_candidate(
            params_, z, z_max, [&](std::size_t i) { return order_[i]; }, n_keep, weights_,
            next_uniform(), total);
        out.token = order_[pick];
    } else { // every id, in id order
        const auto pick = draw_candidate(
            params_, z, z_max, [](std::size_t i) { return i; }, static_cast<std::size_t>(n_vocab),
            weights_, next_uniform(), total);
        out.token = static_cast<std::int32_t>(pick);
    }
    if (report) {
        if (!log_norm && params_.temperature == 1.0f && !filters_on(params_))
            log_norm = z_max + std::log(total); // every id, in id order, at 1/T = 1
        out.logprob = logprob_of(row, out.token, normalizer());
    }
    return out;
}

} // namespace bitnet::model
