#include "model/file_digest.hpp"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <openssl/evp.h>

namespace bitnet::model {

result<file_digest> sha256_file(const std::string& path) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f)
        return error{errc::io_error, "cannot open '" + path + "': " + std::strerror(errno)};
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
        return error{errc::internal, "OpenSSL could not start a SHA-256 digest"};
    file_digest out;
    // On the caller's stack: a heap buffer this size would stay in the calling thread's malloc
    // arena after the hash (a server hashing on short-lived threads would grow by it).
    std::array<unsigned char, 64 * 1024> buf;
    while (true) {
        const auto n = std::fread(buf.data(), 1, buf.size(), f.get());
        if (n > 0) {
            EVP_DigestUpdate(ctx.get(), buf.data(), n);
            out.size_bytes += n;
        }
        if (n < buf.size()) {
            if (std::ferror(f.get()))
                return error{errc::io_error, "cannot read '" + path + "': " + std::strerror(errno)};
            break;
        }
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

} // namespace bitnet::model
