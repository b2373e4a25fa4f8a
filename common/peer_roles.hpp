// What a cluster peer may do (README, "Scaling out"): a node is trusted with a set of roles, taken
// from its certificate over TLS (actors/cluster/peer_identity.hpp) or declared by it in insecure
// mode.
//   replica  it is sent requests (its replicas are routed to);
//   router   it may place requests on other nodes' replicas (and use their text actors);
//   admin    it may order model operations on other nodes (with the admin key's proof too).
#pragma once

#include "common/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace bitnet {

using peer_roles = std::uint8_t;

inline constexpr peer_roles role_replica = 1;
inline constexpr peer_roles role_router = 2;
inline constexpr peer_roles role_admin = 4;
inline constexpr peer_roles all_roles = role_replica | role_router | role_admin;
/// A certificate that names no role: a member that serves and routes, never an admin.
inline constexpr peer_roles default_certificate_roles = role_replica | role_router;

/// "replica,router,admin" (the roles present, in that order); "none" for no role.
[[nodiscard]] std::string roles_text(peer_roles roles);

/// A comma-separated list of role names ("router", "replica,admin"); an unknown or empty item is
/// an error naming it.
[[nodiscard]] result<peer_roles> parse_roles(std::string_view text);

/// The URI subjectAltName a certificate carries for `role` ("urn:bitnet-serve:role:NAME").
inline constexpr std::string_view role_uri_prefix = "urn:bitnet-serve:role:";

} // namespace bitnet
