#include "actors/cluster/peer_identity.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace bitnet::actors {

namespace {

/// OpenSSL's reason for the last failure; the thread's error queue is left empty, since CAF's
/// TLS sessions on the same scheduler thread read it (tools/server/tls_error_queue.cpp).
std::string openssl_reason() {
    const unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e == 0)
        return "unknown reason";
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    return buf;
}

std::string claim_bytes(const join_claim& c) {
    return "bitnet-serve join v1\n" + c.name + "\n" + c.signer_node + "\n" + c.receiver_node +
           "\n" + std::to_string(c.issued_ms);
}

/// The digest a key signs with: none for the EdDSA keys, which hash by themselves.
const EVP_MD* digest_for(EVP_PKEY* key) {
    const int id = EVP_PKEY_get_id(key);
    return id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448 ? nullptr : EVP_sha256();
}

struct chain {
    X509* leaf = nullptr;
    STACK_OF(X509) * rest = nullptr;
    chain() = default;
    chain(const chain&) = delete;
    chain& operator=(const chain&) = delete;
    ~chain() {
        X509_free(leaf);
        sk_X509_pop_free(rest, X509_free);
    }
};

/// The certificates of a PEM text, leaf first; false when there is none.
bool parse_chain(const std::string& pem, chain& out) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    if (!bio)
        return false;
    out.rest = sk_X509_new_null();
    while (X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
        if (!out.leaf)
            out.leaf = x;
        else
            sk_X509_push(out.rest, x);
    }
    BIO_free(bio);
    ERR_clear_error(); // the end of the text reads as an error
    return out.leaf != nullptr;
}

/// The certificates alone, written back as PEM (nothing else the file held goes to peers).
std::string to_pem(const chain& c) {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, c.leaf);
    for (int i = 0; i < sk_X509_num(c.rest); ++i)
        PEM_write_bio_X509(bio, sk_X509_value(c.rest, i));
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    return out;
}

result<std::string> read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return error{errc::io_error, "cannot read '" + path + "'"};
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string text_of(const ASN1_STRING* s) {
    return {reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
            static_cast<std::size_t>(ASN1_STRING_length(s))};
}

/// The leaf's common names, DNS names and role URIs.
struct leaf_names {
    std::vector<std::string> common, dns;
    peer_roles roles = 0;
    bool any_role = false;
};

leaf_names names_of(X509* leaf) {
    leaf_names out;
    X509_NAME* subject = X509_get_subject_name(leaf);
    for (int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1); i >= 0;
         i = X509_NAME_get_index_by_NID(subject, NID_commonName, i))
        out.common.push_back(text_of(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i))));
    auto* sans =
        static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(leaf, NID_subject_alt_name, nullptr, nullptr));
    for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans); ++i) {
        const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
        if (g->type == GEN_DNS)
            out.dns.push_back(text_of(g->d.dNSName));
        else if (g->type == GEN_URI) {
            const auto uri = text_of(g->d.uniformResourceIdentifier);
            if (uri.rfind(role_uri_prefix, 0) != 0)
                continue;
            out.any_role = true;
            // An unknown role name grants nothing (a newer CA may know more roles).
            if (auto r = parse_roles(std::string_view(uri).substr(role_uri_prefix.size())))
                out.roles |= *r;
        }
    }
    GENERAL_NAMES_free(sans);
    ERR_clear_error();
    return out;
}

std::string quoted_list(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v)
        out += (out.empty() ? "'" : ", '") + s + "'";
    return out.empty() ? "nothing" : out;
}

} // namespace

result<std::shared_ptr<const node_credential>> node_credential::load(const std::string& cert_file,
                                                                     const std::string& key_file) {
    auto pem = read_text(cert_file);
    if (!pem)
        return pem.error();
    chain c;
    if (!parse_chain(*pem, c))
        return error{errc::bad_format, "'" + cert_file + "' holds no PEM certificate"};
    auto key_pem = read_text(key_file);
    if (!key_pem)
        return key_pem.error();
    BIO* bio = BIO_new_mem_buf(key_pem->data(), static_cast<int>(key_pem->size()));
    EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
    BIO_free(bio);
    if (!key)
        return error{errc::bad_format,
                     "'" + key_file + "' holds no PEM private key: " + openssl_reason()};
    if (X509_check_private_key(c.leaf, key) != 1) {
        EVP_PKEY_free(key);
        ERR_clear_error();
        return error{errc::invalid_argument,
                     "'" + key_file + "' is not the key of the certificate in '" + cert_file + "'"};
    }
    std::shared_ptr<node_credential> out(new node_credential());
    out->chain_pem_ = to_pem(c);
    out->key_ = key;
    return std::shared_ptr<const node_credential>(std::move(out));
}

node_credential::~node_credential() {
    EVP_PKEY_free(static_cast<EVP_PKEY*>(key_));
}

std::string node_credential::sign(const join_claim& c) const {
    auto* key = static_cast<EVP_PKEY*>(key_);
    const auto data = claim_bytes(c);
    std::string sig;
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    std::size_t len = 0;
    const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
    if (ctx && EVP_DigestSignInit(ctx, nullptr, digest_for(key), nullptr, key) == 1 &&
        EVP_DigestSign(ctx, nullptr, &len, bytes, data.size()) == 1) {
        sig.resize(len);
        if (EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len, bytes,
                           data.size()) == 1)
            sig.resize(len);
        else
            sig.clear();
    }
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    return sig;
}

result<std::shared_ptr<const peer_checker>> peer_checker::load(const std::string& ca_file) {
    X509_STORE* store = X509_STORE_new();
    if (!store || X509_STORE_load_file(store, ca_file.c_str()) != 1) {
        X509_STORE_free(store);
        return error{errc::bad_format,
                     "'" + ca_file + "' holds no usable CA certificate: " + openssl_reason()};
    }
    std::shared_ptr<peer_checker> out(new peer_checker());
    out->store_ = store;
    return std::shared_ptr<const peer_checker>(std::move(out));
}

peer_checker::~peer_checker() {
    X509_STORE_free(static_cast<X509_STORE*>(store_));
}

peer_checker::verdict peer_checker::check(const std::string& chain_pem,
                                          const std::string& signature, const join_claim& c,
                                          std::int64_t now_ms, bool shared_certificate) const {
    verdict v;
    chain ch;
    if (chain_pem.empty() || !parse_chain(chain_pem, ch)) {
        v.refusal = "it sent no certificate with its join (a node in insecure mode, or an older "
                    "version)";
        return v;
    }
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    bool verified =
        ctx && X509_STORE_CTX_init(ctx, static_cast<X509_STORE*>(store_), ch.leaf, ch.rest) == 1;
    if (verified) {
        X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT);
        verified = X509_verify_cert(ctx) == 1;
        if (!verified)
            v.refusal = std::string("the certificate it sent does not verify against the "
                                    "cluster CA: ") +
                        X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
    } else {
        v.refusal = "its certificate could not be checked: " + openssl_reason();
    }
    X509_STORE_CTX_free(ctx);
    ERR_clear_error();
    if (!verified)
        return v;

    const auto data = claim_bytes(c);
    EVP_PKEY* pub = X509_get0_pubkey(ch.leaf);
    EVP_MD_CTX* md = EVP_MD_CTX_new();
    const bool signed_ok =
        pub && md && EVP_DigestVerifyInit(md, nullptr, digest_for(pub), nullptr, pub) == 1 &&
        EVP_DigestVerify(md, reinterpret_cast<const unsigned char*>(signature.data()),
                         signature.size(), reinterpret_cast<const unsigned char*>(data.data()),
                         data.size()) == 1;
    EVP_MD_CTX_free(md);
    ERR_clear_error();
    if (!signed_ok) {
        v.refusal = "its join is not signed by its certificate's key for this link (a proof "
                    "made for another node or process)";
        return v;
    }
    if (std::llabs(now_ms - c.issued_ms) > max_skew_ms) {
        v.refusal = "its join was signed " + std::to_string((now_ms - c.issued_ms) / 1000) +
                    " s from this node's clock (at most " + std::to_string(max_skew_ms / 1000) +
                    " s either way)";
        return v;
    }
    const auto names = names_of(ch.leaf);
    if (!shared_certificate) {
        bool named = false;
        for (const auto* list : {&names.common, &names.dns})
            for (const auto& n : *list)
                named = named || n == c.name;
        if (!named) {
            v.refusal = "its certificate names " + quoted_list(names.common) +
                        " (common name) and " + quoted_list(names.dns) + " (DNS), not '" + c.name +
                        "'";
            return v;
        }
    }
    v.roles = names.any_role ? names.roles : default_certificate_roles;
    return v;
}

} // namespace bitnet::actors
