/*
 * The only C in tapstat: plain functions over DPDK 22.11 for the Rust side
 * (src/ffi.rs), because rte_eth_rx_burst, rte_pktmbuf_mtod, the dynamic field
 * accessors and friends are static inline and cannot be called through FFI.
 *
 * Every function returns 0 (or a count) on success and a negative errno value on
 * failure, never rte_errno (a per-thread variable behind a macro).
 */
#define _GNU_SOURCE /* sched_getaffinity, cpu_set_t */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_mempool.h>

/* One received frame, as the Rust side sees it (struct Pkt in src/ffi.rs). */
struct tapstat_pkt {
	const uint8_t *data; /* first segment's bytes */
	uint32_t data_len;   /* bytes in the first segment */
	uint32_t pkt_len;    /* bytes in all segments */
	uint64_t ts;         /* the rx timestamp dynfield, when has_ts */
	uint16_t nb_segs;
	uint16_t has_ts;
	uint32_t pad;
};

/* Bytes of frame an mbuf holds for a PMD without scattered RX: jumbo frames (9216)
 * with room to spare; src/port.rs's AF_PACKET_FRAMESZ matches it. */
#define TAPSTAT_BIG_FRAME 16384

/* What tapstat_port_setup did (struct PortInfo in src/ffi.rs). */
struct tapstat_port_info {
	char name[64];
	char driver[64];
	uint16_t max_rx_queues;
	uint16_t nb_rxd;      /* descriptors per RX queue after the PMD's limits */
	uint16_t nb_tx;       /* TX queues the PMD insisted on (never used) */
	uint16_t rss_key_len; /* 0: RSS off (one queue, or the PMD has none) */
	uint64_t rss_hf;      /* hash functions actually enabled */
	int32_t socket;
	uint16_t mbuf_room;   /* bytes of frame one mbuf holds */
	uint16_t pad;
	char step[32]; /* what failed, when something did */
};

struct tapstat_stats {
	uint64_t ipackets;
	uint64_t ibytes;
	uint64_t imissed;
	uint64_t ierrors;
	uint64_t rx_nombuf;
};

static int ts_offset = -1;
static uint64_t ts_flag;
static struct rte_mempool *pools[RTE_MAX_ETHPORTS];

/* The rx timestamp dynfield and flag, once some PMD registered them (net_pcap does
 * when probed, at EAL init; NICs when the timestamp offload is enabled). */
static void lookup_timestamp(void)
{
	if (ts_offset >= 0)
		return;
	int off = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, NULL);
	int bit = rte_mbuf_dynflag_lookup(RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME, NULL);
	if (off >= 0 && bit >= 0) {
		ts_flag = UINT64_C(1) << bit;
		ts_offset = off;
	}
}

int tapstat_eal_init(int argc, char **argv)
{
	/* rte_eal_init pins the calling thread to the main lcore; every thread tapstat
	 * spawns afterwards would inherit that one core (and SCHED_DEADLINE refuses a
	 * thread whose affinity is narrower than its root domain). Give it back. */
	cpu_set_t saved;
	int have = sched_getaffinity(0, sizeof(saved), &saved) == 0;
	int rc = rte_eal_init(argc, argv);
	if (rc < 0)
		return rte_errno > 0 ? -rte_errno : -EINVAL;
	if (have)
		sched_setaffinity(0, sizeof(saved), &saved);
	lookup_timestamp();
	return rc;
}

int tapstat_eal_cleanup(void)
{
	return rte_eal_cleanup();
}

/* The first port id at or after `from`, or -1. */
int tapstat_next_port(uint16_t from)
{
	uint64_t p = rte_eth_find_next_owned_by(from, RTE_ETH_DEV_NO_OWNER);
	return p < RTE_MAX_ETHPORTS ? (int)p : -1;
}

/* The most RX queues the port can have, or a negative error. */
int tapstat_port_max_rx_queues(uint16_t port)
{
	struct rte_eth_dev_info di;
	int rc = rte_eth_dev_info_get(port, &di);
	return rc < 0 ? rc : (int)di.max_rx_queues;
}

/* rte_strerror: DPDK's own codes (from RTE_MIN_ERRNO) and errno values. */
const char *tapstat_strerror(int e)
{
	return rte_strerror(e < 0 ? -e : e);
}

int tapstat_has_timestamps(void)
{
	lookup_timestamp();
	return ts_offset >= 0;
}

/* Configures `port` with `nq` RX queues of `nb_rxd` descriptors each (0: the PMD's
 * preference), a pool of mbufs for them, RSS with the symmetric key 0x6d5a... over
 * IP, TCP and UDP when there is more than one queue, promiscuous mode, and starts it.
 * `info` is filled even on failure, as far as known. */
int tapstat_port_setup(uint16_t port, uint16_t nq, uint16_t nb_rxd, struct tapstat_port_info *info)
{
	struct rte_eth_dev_info di;
	struct rte_eth_conf conf;
	/* Toeplitz with a key of one repeated 16-bit word hashes (a, b) and (b, a)
	 * alike, so both directions of a flow reach the same queue (Woo and Park,
	 * "Scalable TCP session monitoring with symmetric receive-side scaling", 2012).
	 * 52 bytes: the longest key a 22.11 PMD asks for (i40e); others take 40. */
	static uint8_t key[52];
	int rc;

	memset(info, 0, sizeof(*info));
	for (size_t i = 0; i < sizeof(key); i += 2) {
		key[i] = 0x6d;
		key[i + 1] = 0x5a;
	}
#define STEP(s) snprintf(info->step, sizeof(info->step), "%s", s)
	STEP("rte_eth_dev_info_get");
	rc = rte_eth_dev_info_get(port, &di);
	if (rc != 0)
		return rc;
	rte_eth_dev_get_name_by_port(port, info->name);
	snprintf(info->driver, sizeof(info->driver), "%s", di.driver_name ? di.driver_name : "?");
	info->max_rx_queues = di.max_rx_queues;
	info->socket = rte_eth_dev_socket_id(port);
	STEP("RX queues");
	if (nq == 0 || nq > di.max_rx_queues)
		return -EINVAL;

	memset(&conf, 0, sizeof(conf));
	uint64_t hf = (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) & di.flow_type_rss_offloads;
	if (nq > 1 && hf != 0) {
		uint8_t len = di.hash_key_size ? di.hash_key_size : 40;
		if (len > sizeof(key))
			return -ENOTSUP;
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_key = key;
		conf.rx_adv_conf.rss_conf.rss_key_len = len;
		conf.rx_adv_conf.rss_conf.rss_hf = hf;
		info->rss_key_len = len;
		info->rss_hf = hf;
	}
	if (di.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER)
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;

	/* No TX queue unless the PMD wants one (tapstat never sends). */
	uint16_t ntx = 0;
	STEP("rte_eth_dev_configure");
	rc = rte_eth_dev_configure(port, nq, ntx, &conf);
	if (rc != 0) {
		ntx = 1;
		rc = rte_eth_dev_configure(port, nq, ntx, &conf);
	}
	if (rc != 0)
		return rc;
	info->nb_tx = ntx;

	uint16_t rxd = nb_rxd ? nb_rxd : 1024, txd = 512;
	STEP("descriptors");
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd);
	if (rc != 0)
		return rc;
	info->nb_rxd = rxd;

	int socket = info->socket >= 0 ? info->socket : (int)rte_socket_id();
	/* A PMD that can chain mbufs (scattered RX) takes any frame in 2 KiB buffers.
	 * One that cannot (net_af_packet) cuts a frame at the buffer's end, so its
	 * buffers hold TAPSTAT_BIG_FRAME bytes (jumbo frames and more). */
	uint16_t room = (di.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER)
		? RTE_MBUF_DEFAULT_BUF_SIZE
		: RTE_PKTMBUF_HEADROOM + TAPSTAT_BIG_FRAME;
	info->mbuf_room = room - RTE_PKTMBUF_HEADROOM;
	if (pools[port] == NULL) {
		char name[RTE_MEMPOOL_NAMESIZE];
		/* Every descriptor of every queue holds an mbuf, and each queue's burst in
		 * flight holds up to 256 more until the acquisition thread frees them. */
		unsigned n = (unsigned)nq * ((unsigned)rxd + 512) + 1024;
		snprintf(name, sizeof(name), "tapstat_p%u", port);
		STEP("rte_pktmbuf_pool_create");
		/* No per-lcore cache: acquisition threads are not EAL threads, which
		 * bypass it anyway. */
		pools[port] = rte_pktmbuf_pool_create(name, n, 0, 0, room, socket);
		if (pools[port] == NULL)
			return rte_errno > 0 ? -rte_errno : -ENOMEM;
	}
	STEP("rte_eth_rx_queue_setup");
	for (uint16_t q = 0; q < nq; q++) {
		rc = rte_eth_rx_queue_setup(port, q, rxd, (unsigned)socket, NULL, pools[port]);
		if (rc != 0)
			return rc;
	}
	STEP("rte_eth_tx_queue_setup");
	for (uint16_t q = 0; q < ntx; q++) {
		rc = rte_eth_tx_queue_setup(port, q, txd, (unsigned)socket, NULL);
		if (rc != 0)
			return rc;
	}
	/* A tap delivers frames for other hosts' MACs; a PMD without the notion
	 * (-ENOTSUP) receives everything anyway. */
	STEP("rte_eth_promiscuous_enable");
	rc = rte_eth_promiscuous_enable(port);
	if (rc != 0 && rc != -ENOTSUP)
		return rc;
	STEP("rte_eth_dev_start");
	rc = rte_eth_dev_start(port);
	if (rc != 0)
		return rc;
	info->step[0] = 0;
	lookup_timestamp();
	return 0;
#undef STEP
}

/* Receives up to `n` frames from (port, queue) into `out`, their mbufs into
 * `mbufs` (to hand back to tapstat_free once the bytes are copied). One thread per
 * queue. */
uint16_t tapstat_rx(uint16_t port, uint16_t queue, struct tapstat_pkt *out, void **mbufs, uint16_t n)
{
	struct rte_mbuf **m = (struct rte_mbuf **)mbufs;
	uint16_t k = rte_eth_rx_burst(port, queue, m, n);
	for (uint16_t i = 0; i < k; i++) {
		out[i].data = rte_pktmbuf_mtod(m[i], const uint8_t *);
		out[i].data_len = m[i]->data_len;
		out[i].pkt_len = m[i]->pkt_len;
		out[i].nb_segs = m[i]->nb_segs;
		if (ts_offset >= 0 && (m[i]->ol_flags & ts_flag)) {
			out[i].ts = *RTE_MBUF_DYNFIELD(m[i], ts_offset, rte_mbuf_timestamp_t *);
			out[i].has_ts = 1;
		} else {
			out[i].ts = 0;
			out[i].has_ts = 0;
		}
	}
	return k;
}

void tapstat_free(void **mbufs, uint16_t n)
{
	rte_pktmbuf_free_bulk((struct rte_mbuf **)mbufs, n);
}

/* Copies the first `cap` bytes of a chained mbuf into `dst`; returns how many. */
uint32_t tapstat_copy(const void *mbuf, uint8_t *dst, uint32_t cap)
{
	const struct rte_mbuf *m = mbuf;
	uint32_t len = m->pkt_len < cap ? m->pkt_len : cap;
	const void *p = rte_pktmbuf_read(m, 0, len, dst);
	if (p == NULL)
		return 0;
	if (p != dst)
		memcpy(dst, p, len);
	return len;
}

int tapstat_stats(uint16_t port, struct tapstat_stats *out)
{
	struct rte_eth_stats st;
	int rc = rte_eth_stats_get(port, &st);
	if (rc != 0)
		return rc;
	out->ipackets = st.ipackets;
	out->ibytes = st.ibytes;
	out->imissed = st.imissed;
	out->ierrors = st.ierrors;
	out->rx_nombuf = st.rx_nombuf;
	return 0;
}

/* Stops and closes `port` and frees its pool; no queue of it may be polled any more. */
void tapstat_port_close(uint16_t port)
{
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
	if (pools[port] != NULL) {
		rte_mempool_free(pools[port]);
		pools[port] = NULL;
	}
}
