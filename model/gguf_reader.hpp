// Zero-copy GGUF v2/v3 reader: maps the file, validates every structure against the file's bounds
// and returns views into the mapping. Knows nothing of transformers (see model_config.hpp).
#pragma once

#include "common/error.hpp"
#include "model/ggml_type.hpp"
#include "model/gguf_value.hpp"
#include "model/mmap_file.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::model {

/// One metadata key/value pair, as stored in the file (views into the mapping).
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
    std::uint64_t offset = 0;           ///< relative to the data section, as in the file
    std::uint64_t n_bytes = 0;          ///< tensor_nbytes(type, ne)
    const std::uint8_t* data = nullptr; ///< into the mapping; valid while the gguf_file lives

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
    /// Maps and validates `path`. Every malformed input is an error naming what and where.
    [[nodiscard]] static result<gguf_file> open(const std::string& path, const gguf_limits& = {});
    /// Validates an in-memory image (the fuzzer's entry point). `bytes` must outlive the result.
    [[nodiscard]] static result<gguf_file> parse(std::span<const std::uint8_t> bytes,
                                                 const gguf_limits& = {});

    [[nodiscard]] std::uint32_t version() const noexcept { return version_; }
    [[nodiscard]] std::uint32_t alignment() const noexcept { return alignment_; }
    [[nodiscard]] std::uint64_t data_offset() const noexcept { return data_offset_; }
    [[nodiscard]] std::uint64_t file_size() const noexcept { return bytes_.size(); }
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

    /// Tells the kernel that `t`'s mapped pages will not be read again (its data was copied into
    /// another layout), so they leave the resident set; a later read faults them back in from the
    /// file. No effect on files parsed from caller-owned bytes.
    void release_pages(const gguf_tensor& t) const noexcept;

private:
    gguf_file() = default;
    result<void> parse_all(const gguf_limits& limits);

    std::shared_ptr<const mmap_file> map_; ///< null when parsing caller-owned bytes
    std::span<const std::uint8_t> bytes_;
    std::string path_;
    std::uint32_t version_ = 0;
    std::uint32_t alignment_ = 32;
    std::uint64_t data_offset_ = 0;
    std::vector<gguf_kv> kvs_;
    std::vector<gguf_tensor> tensors_;
};

} // namespace bitnet::model
