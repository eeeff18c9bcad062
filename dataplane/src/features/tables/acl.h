// Internal to the dataplane library: what Pipeline::build (control) and
// Datapath::run (per packet) share: the classifier's key layout, the
// protocol classes, a table.
#pragma once

#include <netinet/in.h>
#include <rte_acl.h>

#include <type_traits>
#include <vector>

#include "dataplane/pipeline.h"

namespace dp {

// The classify method for a built context: the widest this build, the CPU
// and EAL's SIMD width allow, tried in that order (rte_acl_set_ctx_classify
// refuses what any of them lacks): on aarch64 (BlueField) NEON. Scalar only
// when nothing else is taken; the choice is kept for acl_classifier().
inline const char* pick_classifier(rte_acl_ctx* ctx) {
  static constexpr struct {
    enum rte_acl_classify_alg alg;
    const char* name;
  } kOrder[] = {
#if defined(RTE_ARCH_X86)
      {RTE_ACL_CLASSIFY_AVX512X32, "avx512x32"}, {RTE_ACL_CLASSIFY_AVX512X16, "avx512x16"},
      {RTE_ACL_CLASSIFY_AVX2, "avx2"}, {RTE_ACL_CLASSIFY_SSE, "sse"},
#elif defined(RTE_ARCH_ARM64) || defined(RTE_ARCH_ARM)
      {RTE_ACL_CLASSIFY_NEON, "neon"},
#elif defined(RTE_ARCH_PPC_64)
      {RTE_ACL_CLASSIFY_ALTIVEC, "altivec"},
#endif
      {RTE_ACL_CLASSIFY_SCALAR, "scalar"}};
  for (const auto& a : kOrder)
    if (rte_acl_set_ctx_classify(ctx, a.alg) == 0) return a.name;
  return "default";
}

// rte_acl input keys: the first field is one byte, the rest grouped in
// 4-byte words; multi-byte fields in network byte order.
struct AclKey4 {
  uint8_t proto;
  uint8_t pad[3];
  uint8_t src[4];
  uint8_t dst[4];
  uint16_t sport, dport;
  uint16_t in_port, vlan;
  uint8_t tcp_flags, ct_state;
  uint16_t zone;
  uint32_t tun_id;
};
static_assert(sizeof(AclKey4) == 28 && std::has_unique_object_representations_v<AclKey4>);

struct AclKey6 {
  uint8_t proto;
  uint8_t pad[3];
  uint8_t src[16];
  uint8_t dst[16];
  uint16_t sport, dport;
  uint16_t in_port, vlan;
  uint8_t tcp_flags, ct_state;
  uint16_t zone;
  uint32_t tun_id;
};
static_assert(sizeof(AclKey6) == 52 && std::has_unique_object_representations_v<AclKey6>);



// Rules of one table that are not IPv4/IPv6 (ARP, ND, other ethertypes),
// matched by a short linear scan in priority order.
struct OtherRule {
  uint32_t rule;  // index into rules_
  Match m;
};

// IP rules are classified per protocol class: a TCP packet only walks the
// trie of rules that can match TCP (those naming TCP or no protocol), so a
// rule set's UDP rules cost TCP traffic nothing. Rules without a protocol
// are in all three.
enum ProtoClass { kPcTcp, kPcUdp, kPcOther, kPcNum };
inline int proto_class(uint8_t proto) { return proto == IPPROTO_TCP ? kPcTcp : proto == IPPROTO_UDP ? kPcUdp : kPcOther; }

struct Pipeline::Table {
  rte_acl_ctx* v4[kPcNum] = {};
  rte_acl_ctx* v6[kPcNum] = {};
  std::vector<OtherRule> other;
  ~Table() {
    for (int c = 0; c < kPcNum; c++) {
      if (v4[c]) rte_acl_free(v4[c]);
      if (v6[c]) rte_acl_free(v6[c]);
    }
  }
};

}  // namespace dp
