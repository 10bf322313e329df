// SPDX-License-Identifier: GPL-2.0
// netdoctor's eBPF observers: BTF-enabled tracepoints (tp_btf) only, so nothing needs kprobes
// or tracefs. Counts go into hash maps that user space reads after the run:
//   DROPS:  kfree_skb drops keyed by (reason, location)
//   RETRANS: tcp_retransmit_skb keyed by the connection (IPv4/IPv6 addresses and ports)
//   STATES: inet_sock_set_state transitions of TCP sockets keyed by (old, new)
// TARGET_NETNS (set by the loader) limits every count to one network namespace (its inode
// number); 0 counts all namespaces.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

volatile const __u32 TARGET_NETNS = 0;

struct drop_key {
	__u64 location;
	__u32 reason;
	__u32 pad;
};

struct conn_key {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u16 family;
	__u16 pad;
};

struct state_key {
	__u32 oldstate;
	__u32 newstate;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct drop_key);
	__type(value, __u64);
} DROPS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct conn_key);
	__type(value, __u64);
} RETRANS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct state_key);
	__type(value, __u64);
} STATES SEC(".maps");

static __always_inline void bump(void *map, const void *key)
{
	__u64 one = 1, *v = bpf_map_lookup_elem(map, key);
	if (v)
		__sync_fetch_and_add(v, 1);
	else
		bpf_map_update_elem(map, key, &one, BPF_NOEXIST);
}

static __always_inline int netns_ok_sk(const struct sock *sk)
{
	if (TARGET_NETNS == 0)
		return 1;
	if (!sk)
		return 0;
	return BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum) == TARGET_NETNS;
}

static __always_inline int netns_ok_skb(const struct sk_buff *skb)
{
	if (TARGET_NETNS == 0)
		return 1;
	struct net_device *dev = BPF_CORE_READ(skb, dev);
	if (dev)
		return BPF_CORE_READ(dev, nd_net.net, ns.inum) == TARGET_NETNS;
	return netns_ok_sk(BPF_CORE_READ(skb, sk));
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(kfree_skb, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	// SKB_NOT_DROPPED_YET (0) and SKB_CONSUMED (1) are not drops.
	if ((__u32)reason <= 1)
		return 0;
	if (!netns_ok_skb(skb))
		return 0;
	struct drop_key key = { .location = (__u64)location, .reason = (__u32)reason };
	bump(&DROPS, &key);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_skb, const struct sock *sk, const struct sk_buff *skb)
{
	if (!netns_ok_sk(sk))
		return 0;
	struct conn_key key = {};
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
	key.family = family;
	key.sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	key.dport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (family == 2 /* AF_INET */) {
		__u32 s = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__u32 d = BPF_CORE_READ(sk, __sk_common.skc_daddr);
		__builtin_memcpy(key.saddr, &s, 4);
		__builtin_memcpy(key.daddr, &d, 4);
	} else {
		BPF_CORE_READ_INTO(&key.saddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&key.daddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	}
	bump(&RETRANS, &key);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(inet_sock_set_state, const struct sock *sk, const int oldstate, const int newstate)
{
	if (BPF_CORE_READ(sk, sk_protocol) != 6 /* IPPROTO_TCP */)
		return 0;
	if (!netns_ok_sk(sk))
		return 0;
	struct state_key key = { .oldstate = oldstate, .newstate = newstate };
	bump(&STATES, &key);
	return 0;
}
