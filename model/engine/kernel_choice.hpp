// Which kernel family runs each kind of product of a loaded model, chosen at load by timing every
// family this CPU has on the model's own shapes. CPUID alone says what a CPU can run, not what runs
// fastest on it: on a Zen 4 class CPU (512-bit instructions issued as two 256-bit halves) the AVX2
// ternary kernels beat the AVX-512 ones in prefill, while an Intel or Zen 5 CPU goes the other way.
// Every family gives the same bits (scalar-twin tests), so the choice changes speed only, never
// the numbers; and all SIMD families run one packed ternary layout, so choosing per op costs no
// second copy of the weights. BITNET_ISA still pins one family for every op.
#pragma once

#include "kernels/cpu_features.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::model {

struct model_weights;
struct model_config;

/// The products whose family is chosen separately, by the step's shape.
enum class kernel_op : std::uint8_t {
    ternary_gemv,    ///< one token (single-stream decode)
    ternary_batched, ///< a few tokens (batched decode): compute starts to matter
    ternary_prefill, ///< many tokens (prompt chunks): compute-bound
    logits_gemv,     ///< one logits row
    logits_batched,  ///< several logits rows
};
inline constexpr std::size_t n_kernel_ops = 5;
[[nodiscard]] std::string_view kernel_op_name(kernel_op op) noexcept;

/// Steps of at least this many tokens use the prefill family; 2 up to it the batched one.
inline constexpr std::size_t prefill_from_tokens = 64;

/// One candidate's time for one op: the best of its repeats, in microseconds.
struct family_timing {
    std::string family;
    double micros = 0.0;
};

/// What was chosen for one op and why: a plain value (it reaches /v1/models and `inspect`).
struct kernel_choice {
    std::string op;     ///< kernel_op_name
    std::string family; ///< kernels::isa_name
    /// "measured" (fastest of `timings`), "only family" (one candidate), or "pinned by BITNET_ISA".
    std::string source;
    std::uint32_t tokens = 0;           ///< rows the timing ran (0 when nothing was timed)
    std::vector<family_timing> timings; ///< one per candidate, in candidate order
};

/// One run of an op with a family, returning its wall time in seconds.
using timed_run = std::function<double(kernels::isa)>;

/// The family that won and the report of how (its name is `report.family`).
struct timed_choice {
    kernels::isa family = kernels::isa::scalar;
    kernel_choice report;
};

/// Runs every candidate once to warm up, then `repeats` rounds in turn (A B A B, so a slow
/// moment of a shared machine hits them alike) and keeps each one's best time. The fastest wins;
/// a tie goes to the earlier candidate. One candidate is not timed.
[[nodiscard]] timed_choice pick_fastest(kernel_op op, std::span<const kernels::isa> candidates,
                                        std::uint32_t tokens, const timed_run& run,
                                        int repeats = 3);

/// The family of every op, and the report of how each was chosen.
class kernel_plan {
public:
    /// Every op on `family` (a pin, or a model too small to time).
    [[nodiscard]] static kernel_plan uniform(kernels::isa family, std::string_view source);

    [[nodiscard]] kernels::isa family(kernel_op op) const noexcept {
        return family_[static_cast<std::size_t>(op)];
    }
    /// The ternary family for a step of `n_tokens` tokens.
    [[nodiscard]] kernels::isa ternary_for(std::size_t n_tokens) const noexcept;
    /// The logits family for `n_rows` rows.
    [[nodiscard]] kernels::isa logits_for(std::size_t n_rows) const noexcept;
    [[nodiscard]] const std::vector<kernel_choice>& report() const noexcept { return report_; }
    /// One line for logs and describe(), e.g. "ternary_gemv avx512_vnni (measured), ...".
    [[nodiscard]] std::string summary() const;

    void set(kernel_op op, kernels::isa family, kernel_choice why);

private:
    std::array<kernels::isa, n_kernel_ops> family_{};
    std::vector<kernel_choice> report_;
};

/// Times the ternary products on layer 0's own matrices and the logits product on a slice of the
/// logits matrix, with `n_threads` threads, for every SIMD family that can run the packed weights,
/// and picks the fastest per op. With BITNET_ISA set, or no SIMD family, every op runs the family
/// the weights were packed for. Takes tens to a few hundred milliseconds on a 2B model.
[[nodiscard]] kernel_plan choose_kernels(const model_weights& w, const model_config& c,
                                         int n_threads, std::uint32_t max_batch_tokens);

/// How many greedy-only rows a step takes from the greedy screen (model_weights::logits_screen,
/// kernels/greedy_screen.hpp): the screen reads half the F16 product's bytes but does more work
/// per row (its Q8_0 product, then the candidates in F16), so it wins at a few rows and loses
/// once the products are compute-bound, where each machine's int8 and FMA peaks put it. Timed
/// at load on the whole matrix (at one row its gain is the bytes it does not read, which a
/// cache-sized slice would hide) for 1, 2, 4, 8 and 16 rows of normal activations, the two
/// alternating, best of 3: the most rows before the first size where the F16 product was as
/// fast, 0 when it was at one row. Tens of milliseconds per size on a 2B model. With no screen,
/// 0; with BITNET_ISA pinned, still timed (on the pinned families).
struct screen_rows_choice {
    std::uint32_t max_rows = 0;
    std::string timings; ///< "rows:screen/f16 us ..." for logs and describe()
};
[[nodiscard]] screen_rows_choice choose_screen_rows(const model_weights& w, const model_config& c,
                                                    int n_threads, const kernel_plan& plan);

} // namespace bitnet::model
