// Certificate-bound node names for a TLS cluster. CAF's OpenSSL module checks that every link's
// certificate was signed by the cluster CA, but never tells the actors which certificate it was;
// so each side of a join also sends its certificate chain and a signature by that certificate's
// key over what it claims: its node name, its own CAF node id, the receiver's node id and the
// time (messages/cluster.hpp, join_proof). The receiver checks the chain against the CA, the name
// against the certificate (its common name or one of its DNS subjectAltNames) and takes the
// node's roles from the certificate's role URIs (common/peer_roles.hpp). A proof names its
// receiver and the sender's process, so one seen by a peer is of no use anywhere else.
#pragma once

#include "common/error.hpp"
#include "common/peer_roles.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace bitnet::actors {

/// What a join proof signs.
struct join_claim {
    std::string name;          ///< the node name claimed
    std::string signer_node;   ///< caf::to_string of the signer's node id
    std::string receiver_node; ///< caf::to_string of the receiver's node id
    std::int64_t issued_ms = 0;
};

/// This node's certificate chain and key (cluster_cert, cluster_key).
class node_credential {
public:
    /// Reads both PEM files; an error names the file and OpenSSL's reason.
    [[nodiscard]] static result<std::shared_ptr<const node_credential>>
    load(const std::string& cert_file, const std::string& key_file);
    ~node_credential();
    node_credential(const node_credential&) = delete;
    node_credential& operator=(const node_credential&) = delete;

    [[nodiscard]] const std::string& chain_pem() const noexcept { return chain_pem_; }
    /// The signature of `c` by the key (raw bytes; empty only when OpenSSL fails).
    [[nodiscard]] std::string sign(const join_claim& c) const;

private:
    node_credential() = default;
    std::string chain_pem_;
    void* key_ = nullptr; ///< EVP_PKEY
};

/// The cluster CA (cluster_ca), checking peers' join proofs.
class peer_checker {
public:
    [[nodiscard]] static result<std::shared_ptr<const peer_checker>>
    load(const std::string& ca_file);
    ~peer_checker();
    peer_checker(const peer_checker&) = delete;
    peer_checker& operator=(const peer_checker&) = delete;

    /// The oldest or furthest-ahead `issued_ms` accepted, against the checker's clock.
    static constexpr std::int64_t max_skew_ms = 5 * 60 * 1000;

    struct verdict {
        std::string refusal; ///< empty: accepted
        peer_roles roles = 0;
    };
    /// Checks a proof of `c`: the chain verifies against the CA for client and server use, the
    /// signature is the leaf key's over `c`, `c.issued_ms` is within max_skew_ms of `now_ms`,
    /// and (unless `shared_certificate`, where every node holds one certificate and names are
    /// not bound) the leaf names `c.name`. The roles are the leaf's role URIs, or
    /// default_certificate_roles when it has none.
    [[nodiscard]] verdict check(const std::string& chain_pem, const std::string& signature,
                                const join_claim& c, std::int64_t now_ms,
                                bool shared_certificate) const;

private:
    peer_checker() = default;
    void* store_ = nullptr; ///< X509_STORE
};

} // namespace bitnet::actors
