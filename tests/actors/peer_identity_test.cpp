// Join proofs (actors/cluster/peer_identity.hpp) with certificates from
// deploy/cluster/make-certs.sh: a proof passes only for the name its certificate carries, the link
// it was made for (signer and receiver), a time within the skew, a chain the cluster CA signed and
// an untouched signature; the roles are the certificate's role URIs, or replica and router when it
// has none.
#include "actors/cluster/peer_identity.hpp"

#include "server/certs.hpp"

#include <doctest/doctest.h>

#include <filesystem>

using namespace bitnet;
using namespace bitnet::actors;

namespace {

struct cert_dir {
    test::scratch_dir scratch;
    std::string path = scratch.file("certs");
    cert_dir() {
        std::filesystem::create_directories(path);
        test::make_certs(path + "/ca", "a:replica,router,admin b");
        test::make_certs(path + "/other", "a");
    }
    [[nodiscard]] std::shared_ptr<const node_credential> credential(const std::string& ca,
                                                                    const std::string& node) const {
        auto c = node_credential::load(path + "/" + ca + "/" + node + ".crt",
                                       path + "/" + ca + "/" + node + ".key");
        REQUIRE_MESSAGE(c.has_value(), c.error().message);
        return *c;
    }
    [[nodiscard]] std::shared_ptr<const peer_checker> checker() const {
        auto c = peer_checker::load(path + "/ca/ca.crt");
        REQUIRE_MESSAGE(c.has_value(), c.error().message);
        return *c;
    }
};

const std::int64_t now = 1'800'000'000'000;

join_claim claim(const std::string& name) {
    return {name, "node-of-signer", "node-of-receiver", now};
}

} // namespace

TEST_CASE("peer identity: a proof passes for its own name and link, with the certificate's roles") {
    cert_dir d;
    const auto checker = d.checker();
    const auto a = d.credential("ca", "a");
    const auto b = d.credential("ca", "b");

    auto v = checker->check(a->chain_pem(), a->sign(claim("a")), claim("a"), now, false);
    CHECK(v.refusal.empty());
    CHECK(v.roles == (role_replica | role_router | role_admin));
    v = checker->check(b->chain_pem(), b->sign(claim("b")), claim("b"), now + 60'000, false);
    CHECK_MESSAGE(v.refusal.empty(), v.refusal);
    CHECK(v.roles == default_certificate_roles);
    CHECK(roles_text(v.roles) == "replica,router");
    // Only certificates travel, never the key.
    CHECK(a->chain_pem().find("BEGIN CERTIFICATE") != std::string::npos);
    CHECK(a->chain_pem().find("PRIVATE") == std::string::npos);
}

TEST_CASE("peer identity: a proof is refused for another name, another link, another time, "
          "another CA or a changed signature") {
    cert_dir d;
    const auto checker = d.checker();
    const auto a = d.credential("ca", "a");
    const auto sig = a->sign(claim("a"));
    REQUIRE(checker->check(a->chain_pem(), sig, claim("a"), now, false).refusal.empty());

    // b's name with a's certificate, signed properly: the certificate names a.
    auto v = checker->check(a->chain_pem(), a->sign(claim("b")), claim("b"), now, false);
    CHECK(v.refusal.find("names 'a'") != std::string::npos);
    CHECK(v.refusal.find("not 'b'") != std::string::npos);
    // With one certificate shared by every node, names are not bound, roles still are.
    v = checker->check(a->chain_pem(), a->sign(claim("b")), claim("b"), now, true);
    CHECK(v.refusal.empty());
    CHECK(v.roles == (role_replica | role_router | role_admin));

    // The same signature presented on another link (receiver or sender process) or for another
    // name does not verify.
    auto other = claim("a");
    other.receiver_node = "node-of-someone-else";
    CHECK(checker->check(a->chain_pem(), sig, other, now, false).refusal.find("not signed") !=
          std::string::npos);
    other = claim("a");
    other.signer_node = "node-of-a-thief";
    CHECK_FALSE(checker->check(a->chain_pem(), sig, other, now, false).refusal.empty());

    // Too old or too far ahead.
    CHECK(
        checker->check(a->chain_pem(), sig, claim("a"), now + peer_checker::max_skew_ms + 1, false)
            .refusal.find("signed") != std::string::npos);
    CHECK_FALSE(
        checker->check(a->chain_pem(), sig, claim("a"), now - peer_checker::max_skew_ms - 1, false)
            .refusal.empty());

    // A flipped byte of the signature.
    auto bad = sig;
    bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 0x40);
    CHECK_FALSE(checker->check(a->chain_pem(), bad, claim("a"), now, false).refusal.empty());

    // A pair another CA signed, proof and all.
    const auto foreign = d.credential("other", "a");
    v = checker->check(foreign->chain_pem(), foreign->sign(claim("a")), claim("a"), now, false);
    CHECK(v.refusal.find("does not verify against the cluster CA") != std::string::npos);

    // No certificate at all (an insecure node joining a TLS one cannot, but a proof may be empty).
    CHECK(checker->check("", "", claim("a"), now, false).refusal.find("no certificate") !=
          std::string::npos);
}

TEST_CASE("peer identity: a key that is not the certificate's, and files without PEM, are "
          "refused at load") {
    cert_dir d;
    auto mixed = node_credential::load(d.path + "/ca/a.crt", d.path + "/ca/b.key");
    REQUIRE_FALSE(mixed.has_value());
    CHECK(mixed.error().message.find("is not the key of the certificate") != std::string::npos);
    auto no_cert = node_credential::load(d.path + "/ca/a.key", d.path + "/ca/a.key");
    CHECK_FALSE(no_cert.has_value());
    CHECK_FALSE(peer_checker::load(d.path + "/ca/a.key").has_value());
    CHECK_FALSE(peer_checker::load(d.path + "/missing.crt").has_value());
}

TEST_CASE("peer roles: lists parse and print, unknown names are errors") {
    auto r = parse_roles("router,admin");
    REQUIRE(r.has_value());
    CHECK(*r == (role_router | role_admin));
    CHECK(roles_text(*r) == "router,admin");
    CHECK(roles_text(0) == "none");
    CHECK_FALSE(parse_roles("").has_value());
    CHECK_FALSE(parse_roles("replica,").has_value());
    const auto bad = parse_roles("replica,root");
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().message.find("'root'") != std::string::npos);
}
