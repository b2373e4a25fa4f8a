// TL1 / TL2 (bitnet.cpp's LUT-kernel formats) decoding to ternary_matrix, and the kernel
// parameters (BM, BK, bm) those layouts depend on but the GGUF does not store (docs/GGUF-FORMAT.md
// §2.3, §2.4, §2.6, §6.4). Decoding only: nothing here runs the LUT kernels.
#pragma once

#include "common/error.hpp"
#include "model/engine/weights/ternary_weights.hpp"
#include "model/gguf/gguf_reader.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::model {

/// Which LUT layout a parameter set belongs to. The same (M, K) has different parameters for
/// TL1 and TL2, and a kernel_config.ini does not say which it is for.
enum class tl_format { tl1, tl2 };

/// "TL1" or "TL2".
std::string_view tl_format_name(tl_format f) noexcept;

/// Kernel parameters of one weight shape, named as in bitnet.cpp's kernel_config.ini.
struct tl_params {
    std::uint32_t bm = 0;  ///< BM: rows per M-tile
    std::uint32_t bk = 0;  ///< BK (codegen's BY): inputs per K-block
    std::uint32_t bmm = 0; ///< bm: rows per sub-tile (TL1: 32 or 64, with by = 256/bm; TL2: 32)

    friend bool operator==(const tl_params&, const tl_params&) = default;
};

/// Checks the constraints bitnet.cpp's code generators assert, plus those the byte layout needs
/// (docs/GGUF-FORMAT.md §2.6, §6.4). TL1: M%BM == 0, K%BK == 0, BM%bm == 0, bm ∈ {32, 64}, BK%by ==
/// 0 with by = 256/bm. TL2: bm == 32, M%BM == 0, BM%32 == 0, BK%24 == 0 (8-triplet sign groups),
/// (K%BK)%32 == 0. Errors are `unsupported_shape` naming the shape and the broken rule.
[[nodiscard]] result<void> validate_tl_params(tl_format f, std::uint32_t m, std::uint32_t k,
                                              const tl_params& p);

/// Parameters keyed by (format, M, K), M = output rows, K = inputs. Every entry was validated.
class tl_param_table {
public:
    struct entry {
        tl_format format = tl_format::tl1;
        std::uint32_t m = 0;
        std::uint32_t k = 0;
        tl_params params;
    };

    /// Adds a validated entry. Errors: the constraints of validate_tl_params, or `invalid_argument`
    /// when (format, M, K) is already present (even with equal parameters: one source per shape).
    [[nodiscard]] result<void> add(tl_format f, std::uint32_t m, std::uint32_t k,
                                   const tl_params& p);
    /// Adds every entry of `other`; entries already present with equal parameters are skipped,
    /// conflicting ones are an `invalid_argument` error (and nothing of `other` is added).
    [[nodiscard]] result<void> merge(const tl_param_table& other);

    /// nullptr when the shape has no parameters for this format.
    [[nodiscard]] const tl_params* find(tl_format f, std::uint32_t m,
                                        std::uint32_t k) const noexcept;
    [[nodiscard]] const std::vector<entry>& entries() const noexcept { return entries_; }
    [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }

    /// The published models' parameters (docs/GGUF-FORMAT.md §6.4): bitnet_b1_58-large,
    /// bitnet_b1_58-3B and Llama3-8B (also Falcon3 / Falcon-E), for TL1 and TL2. NOTE:
    /// BitNet-b1.58-2B-4T has no TL shapes here; bitnet.cpp generates none for it either.
    [[nodiscard]] static const tl_param_table& builtin();

private:
    std::vector<entry> entries_;
};

/// Parses bitnet.cpp's kernel_config.ini (what its codegen_tl1.py / codegen_tl2.py write beside
/// the kernels): sections `[Kernels_N]`, each with the keys m, k, bm, bk, bmm (case-insensitive,
/// `=` or `:`, `#` / `;` comment lines). The file does not name its format, so the caller says.
/// Errors (`bad_format` for syntax, missing or unknown keys, non-numbers; the add() errors for
/// constraint violations and duplicate shapes) name the section and line.
[[nodiscard]] result<tl_param_table> parse_kernel_config_ini(std::string_view text, tl_format f);

/// Reads and parses a kernel_config.ini file. `io_error` when it cannot be read.
[[nodiscard]] result<tl_param_table> load_kernel_config_ini(const std::string& path, tl_format f);

/// Decodes a TL1 or TL2 tensor to ternary weights and its scale with the parameters `params`
/// holds for the tensor's (M, K) (docs/GGUF-FORMAT.md §2.6). A shape without parameters is refused
/// with `unsupported_shape` naming the tensor, its shape and the format: the byte order depends on
/// parameters the file does not store, so guessing would silently scramble the weights.
/// Other errors: not TL1/TL2, not 2-D, bytes too short, a nibble outside the format's range.
[[nodiscard]] result<ternary_matrix> decode_tl(const gguf_tensor& t, const tl_param_table& params);

} // namespace bitnet::model
