// What bench_engine measured in one run, and its JSON (--json, described in bench/README.md):
// every figure beside this machine's ceilings and the fraction of each it reached.
#pragma once

#include "ceilings.hpp"
#include "model/engine/kernel_choice.hpp"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

/// Everything one run measured, for --json.
struct figures {
    std::string model, engine;
    int threads = 0;
    double single_tps = 0, prefill_tps = 0;
    std::size_t prefill_tokens = 0;
    std::vector<std::pair<std::size_t, double>> aggregate; ///< (sequences, tokens/s)
    double peak_rss_mib = 0, bandwidth_gbs = 0, bytes_per_token = 0;
    double ternary_macs_per_token = 0, logits_macs_per_token = 0;
    bool q8_logits = false; ///< logits in int8 (Q8_0): priced at the int8 peak, not the FMA one
    bitnet::bench::peak int8, fp32;
    std::vector<bitnet::model::kernel_choice> kernels; ///< the family of each op, as chosen at load
};

/// The ceilings a run's figures are measured against (tokens/s), from its own measurements.
struct token_ceilings {
    double decode_roofline = 0; ///< read bandwidth / bytes read per decode token
    double prefill_int8 = 0;    ///< int8 peak / ternary MACs per token
    double aggregate = 0;       ///< ternary MACs at the int8 peak + logits at the FMA peak
};

/// The ceilings of `f`, from its own measurements.
[[nodiscard]] token_ceilings ceilings_of(const figures& f);

/// Writes `f` as one JSON object to `path` (a line on stderr when it cannot).
void write_json(const std::string& path, const figures& f);
