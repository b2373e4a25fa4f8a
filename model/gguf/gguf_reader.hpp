// GGUF v2/v3 reader: reads the file into memory of its own (file_image.hpp: pread, never a mapping
// of the file, so a file changed under a load is an error and not a SIGBUS), validates every
// structure against the file's bounds and returns views into those bytes. Knows nothing of
// transformers (see model_config.hpp).
#pragma once

#include "common/error.hpp"
#include "model/gguf/file_image.hpp"
#include "model/gguf/ggml_type.hpp"
#include "model/gguf/gguf_value.hpp"
#include "model/gguf/regular_file.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace bitnet::model {
namespace gguf_detail {
class cursor;
}

/// One metadata key/value pair, as stored in the file (views into the file's bytes).
struct gguf_kv {
    std::string_view key;
    gguf_value_view value;
    std::uint64_t file_offset = 0; ///< where the key's length field starts, for messages
};

/// One tensor info record plus where its bytes are.
struct gguf_tensor {
    std::string_view name;
    ggml_type type = ggml_type::f32;
    std::uint32_t n_dims = 0;
    tensor_shape ne{1, 1, 1, 1};
    std::uint64_t offset = 0;  ///< relative to the data section, as in the file
    std::uint64_t n_bytes = 0; ///< tensor_nbytes(type, ne)
    /// Into the file's bytes, valid while the gguf_file lives; null when only the metadata was
    /// read.
    const std::uint8_t* data = nullptr;

    [[nodiscard]] std::uint64_t n_elements() const noexcept {
        return ne[0] * ne[1] * ne[2] * ne[3];
    }
    [[nodiscard]] std::span<const std::uint8_t> bytes() const noexcept { return {data, n_bytes}; }
};

/// Limits that keep a hostile file from making the reader allocate or loop without bound.
struct gguf_limits {
    std::uint64_t max_tensors = 1u << 20;
    std::uint64_t max_kv = 1u << 16;
    std::uint64_t max_array_elements = 1u << 26; ///< per array
    std::uint64_t max_string_bytes = 1u << 26;   ///< per string
};

/// An opened, validated GGUF file. Move-only; views stay valid while it lives.
class gguf_file {
public:
    /// Reads and validates the whole of `path`. Every malformed input is an error naming what and
    /// where, without quoting the file's bytes; only regular files open (regular_file.hpp); a file
    /// that changes while it is read is an io_error; `cancel` ends the read early (cancelled).
    [[nodiscard]] static result<gguf_file> open(const std::string& path, const gguf_limits& = {},
                                                const cancel_flag* cancel = nullptr);
    /// As open, but reads only the header, the metadata and the tensor table (a prefix of the
    /// file, at most max_metadata_bytes); every tensor's `data` is null. For checks and
    /// tokenizers, which read no weights.
    [[nodiscard]] static result<gguf_file> open_metadata(const std::string& path,
                                                         const gguf_limits& = {},
                                                         const cancel_flag* cancel = nullptr);
    static constexpr std::uint64_t max_metadata_bytes = std::uint64_t{256} << 20;
    /// Validates an in-memory image (the fuzzer's entry point). `bytes` must outlive the result.
    [[nodiscard]] static result<gguf_file> parse(std::span<const std::uint8_t> bytes,
                                                 const gguf_limits& = {});

    [[nodiscard]] std::uint32_t version() const noexcept { return version_; }
    [[nodiscard]] std::uint32_t alignment() const noexcept { return alignment_; }
    [[nodiscard]] std::uint64_t data_offset() const noexcept { return data_offset_; }
    [[nodiscard]] std::uint64_t file_size() const noexcept { return file_size_; }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

    [[nodiscard]] const std::vector<gguf_kv>& metadata() const noexcept { return kvs_; }
    [[nodiscard]] const std::vector<gguf_tensor>& tensors() const noexcept { return tensors_; }

    /// nullptr when absent.
    [[nodiscard]] const gguf_value_view* find(std::string_view key) const noexcept;
    [[nodiscard]] const gguf_tensor* find_tensor(std::string_view name) const noexcept;

    // Typed getters: not_found when absent, bad_format when the stored type cannot convert
    // (any integer type converts to an integer if the value fits; f32/f64 to double).
    [[nodiscard]] result<std::uint64_t> get_uint(std::string_view key) const;
    [[nodiscard]] result<std::int64_t> get_int(std::string_view key) const;
    [[nodiscard]] result<double> get_float(std::string_view key) const;
    [[nodiscard]] result<bool> get_bool(std::string_view key) const;
    [[nodiscard]] result<std::string_view> get_string(std::string_view key) const;
    /// Array of strings (views into the mapping).
    [[nodiscard]] result<std::vector<std::string_view>>
    get_string_array(std::string_view key) const;
    /// Numeric arrays, converted element-wise.
    [[nodiscard]] result<std::vector<float>> get_float_array(std::string_view key) const;
    [[nodiscard]] result<std::vector<std::int64_t>> get_int_array(std::string_view key) const;

    /// Hands `t`'s pages back to the OS: its data was copied into another layout and is not read
    /// again (it reads as zeros afterwards). No effect on files parsed from caller-owned bytes.
    void release_pages(const gguf_tensor& t) const noexcept;

private:
    gguf_file() = default;
    static result<gguf_file> read(const std::string& path, const gguf_limits& limits,
                                  const cancel_flag* cancel, bool metadata_only);
    // The parse, in file order: header (returns tensor and metadata counts), metadata,
    // general.alignment, the tensor table, then each tensor's place in the data section.
    result<void> parse_all(const gguf_limits& limits);
    result<std::pair<std::uint64_t, std::uint64_t>> parse_header(gguf_detail::cursor& c,
                                                                 const gguf_limits& limits);
    result<void> parse_metadata(gguf_detail::cursor& c, std::uint64_t n_kv,
                                const gguf_limits& limits);
    result<void> parse_alignment();
    result<void> parse_tensor_table(gguf_detail::cursor& c, std::uint64_t n_tensors,
                                    const gguf_limits& limits);
    result<gguf_tensor> parse_tensor_info(gguf_detail::cursor& c, std::uint64_t i,
                                          std::unordered_set<std::string_view>& names,
                                          const gguf_limits& limits) const;
    result<void> place_tensors(std::uint64_t table_end);

    std::shared_ptr<const file_image> image_; ///< null when parsing caller-owned bytes
    std::span<const std::uint8_t> bytes_;     ///< the whole file, or its metadata prefix
    std::uint64_t file_size_ = 0;
    std::string path_;
    std::uint32_t version_ = 0;
    std::uint32_t alignment_ = 32;
    std::uint64_t data_offset_ = 0;
    std::vector<gguf_kv> kvs_;
    std::vector<gguf_tensor> tensors_;
};

/// Reads the first bytes of `file`: bad_format "not a GGUF file" (naming no byte of it) unless it
/// starts with the GGUF magic. A cheap check before a load reads (and hashes) a whole file.
[[nodiscard]] result<void> check_gguf_magic(const regular_file& file);

} // namespace bitnet::model
