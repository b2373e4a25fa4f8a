#include "model/gguf/file_digest.hpp"

#include <algorithm>
#include <array>
#include <memory>

#include <openssl/evp.h>

namespace bitnet::model {

result<file_digest> sha256_file(const regular_file& file, const cancel_flag* cancel) {
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
        return error{errc::internal, "OpenSSL could not start a SHA-256 digest"};
    file_digest out;
    // On the caller's stack: a heap buffer this size would stay in the calling thread's malloc
    // arena after the hash (a server hashing on short-lived threads would grow by it).
    std::array<unsigned char, 64 * 1024> buf;
    // Exactly the size seen at the open: a file that grows or shrinks meanwhile fails a read or
    // the caller's check_unchanged, never hashes forever.
    for (std::uint64_t at = 0; at < file.size(); at += buf.size()) {
        if ((at & ((std::uint64_t{16} << 20) - 1)) == 0)
            BITNET_TRY(check_cancel(cancel, "hashing '" + file.path() + "'"));
        const auto n =
            static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), file.size() - at));
        BITNET_TRY(file.read_at(at, {buf.data(), n}));
        EVP_DigestUpdate(ctx.get(), buf.data(), n);
        out.size_bytes += n;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    if (EVP_DigestFinal_ex(ctx.get(), md, &md_len) != 1)
        return error{errc::internal, "OpenSSL could not finish a SHA-256 digest"};
    static const char* hex = "0123456789abcdef";
    out.sha256_hex.reserve(2 * md_len);
    for (unsigned i = 0; i < md_len; ++i) {
        out.sha256_hex.push_back(hex[md[i] >> 4]);
        out.sha256_hex.push_back(hex[md[i] & 15]);
    }
    return out;
}

result<file_digest> sha256_file(const std::string& path, const cancel_flag* cancel) {
    auto file = regular_file::open(path);
    if (!file)
        return file.error();
    return sha256_file(*file, cancel);
}

} // namespace bitnet::model
