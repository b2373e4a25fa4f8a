// Byte-exact GGUF v3 writer. Streams: the header and tensor infos are written first, then each
// tensor's bytes in declaration order, so a 1 GB model never has to sit in memory.
#pragma once

#include "common/error.hpp"
#include "model/gguf/ggml_type.hpp"
#include "model/gguf/gguf_value.hpp"

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace bitnet::model {

class gguf_writer {
public:
    gguf_writer() = default;
    gguf_writer(const gguf_writer&) = delete;
    gguf_writer& operator=(const gguf_writer&) = delete;
    ~gguf_writer();

    /// Metadata in the order given (duplicates are an error at begin()).
    void add(std::string key, gguf_value value);
    /// `general.alignment` is written as a u32 KV when not the default 32.
    void set_alignment(std::uint32_t alignment);
    /// Declares a tensor; its data must be written later, in declaration order.
    void add_tensor(std::string name, ggml_type type, std::uint32_t n_dims, tensor_shape ne);

    /// Opens `path` and writes header, metadata, tensor infos and the padding before the data.
    [[nodiscard]] result<void> begin(const std::string& path);
    /// Writes the next declared tensor's bytes (exactly tensor_nbytes of it) plus its padding.
    [[nodiscard]] result<void> write_tensor_data(std::span<const std::uint8_t> bytes);
    /// Streams the current tensor in pieces; when its byte count is reached the padding follows
    /// and the next tensor begins. A piece may not cross into the next tensor.
    [[nodiscard]] result<void> write_tensor_chunk(std::span<const std::uint8_t> bytes);
    /// Checks every declared tensor was written, flushes and closes.
    [[nodiscard]] result<void> finish();

    /// The whole file in memory (tests, fuzz seeds): begin/write/finish into a buffer.
    [[nodiscard]] result<std::vector<std::uint8_t>>
    to_bytes(const std::vector<std::vector<std::uint8_t>>& tensor_data);

private:
    struct tensor_decl {
        std::string name;
        ggml_type type;
        std::uint32_t n_dims;
        tensor_shape ne;
        std::uint64_t n_bytes = 0;
        std::uint64_t offset = 0;
    };
    [[nodiscard]] result<std::vector<std::uint8_t>> header_bytes();
    [[nodiscard]] result<void> put(const void* p, std::size_t n);

    std::vector<std::pair<std::string, gguf_value>> kvs_;
    std::vector<tensor_decl> tensors_;
    std::uint32_t alignment_ = 32;
    std::FILE* out_ = nullptr;
    std::vector<std::uint8_t>* out_mem_ = nullptr;
    std::string path_;
    std::size_t next_tensor_ = 0;
    std::uint64_t tensor_written_ = 0; ///< bytes of tensors_[next_tensor_] written so far
    std::uint64_t written_ = 0;
};

} // namespace bitnet::model
