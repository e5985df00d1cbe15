/*
 * router: a packet-forwarding-like workload for perflab's performance-model example
 * (the router performance-index experiment). Not a real router: it reproduces what
 * makes one slow on a given platform.
 *
 * Each worker thread, pinned to its own core, owns a receive ring of large buffers
 * (9 KiB by default, like the experiment's router: 3/4 of them start mid-page) holding
 * 172-byte IPv4/UDP packets, walked with a step of 5 so that consecutive packets are
 * far apart in memory (TLB misses, as in mmbm's small_tlbmiss case). Per packet it:
 *   1. verifies the IPv4 header checksum,
 *   2. looks the destination up in a hashed forwarding table (64 Ki entries),
 *   3. decrements the TTL with an incremental checksum update (RFC 1624),
 *   4. rewrites the Ethernet addresses for the next hop,
 *   5. copies the packet into a transmit ring and counts it on its output port.
 * At the end every buffer's checksum is verified again and the per-port counts must
 * add up to the packets forwarded; the JSON result says whether that held.
 *
 * Build: gcc -O2 -pthread -o router router.c
 * Run:   ./router --cores 2,3 --duration 5
 * Output (stdout, one JSON object): pkts_per_sec (all threads), per-core rates, …
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_THREADS 256
#define RING_STEP 5
#define PORTS 8
#define TX_SLOTS 256
#define TX_SLOT_SIZE 2048

struct fib_entry {
    uint32_t dst;
    uint16_t port;
    uint8_t mac[6];
};

struct config {
    int cores[MAX_THREADS];
    int ncores;
    double duration;
    double warmup;
    size_t buffers;
    size_t buffer_size;
    size_t packet_len;
    size_t fib_entries; /* power of two */
};

struct worker {
    const struct config *cfg;
    int core;
    int index;
    pthread_barrier_t *barrier;
    /* results */
    uint64_t packets;
    double seconds;
    uint64_t port_count[PORTS];
    uint64_t digest; /* depends on every forwarding decision: printed so none can be optimised away */
    int valid;
    char error[160];
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Internet checksum over a 20-byte IPv4 header; 0 when the stored checksum is right. */
static uint16_t ip_checksum(const uint8_t *h) {
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += (uint32_t)(h[i] << 8 | h[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

static uint32_t hash32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352d;
    x ^= x >> 15;
    x *= 0x846ca68b;
    x ^= x >> 16;
    return x;
}

static int huge_pages; /* --pages huge */

static void *map(size_t len) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    /* Base 4 KiB pages by default: the TLB sees what a router's buffers cost. */
    madvise(p, len, huge_pages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    return p;
}

/* Ethernet (14) + IPv4 (20) + UDP (8) + payload, total len bytes. */
static void make_packet(uint8_t *p, size_t len, uint32_t src, uint32_t dst, uint64_t *rng) {
    memset(p, 0, len);
    for (int i = 0; i < 12; i++) p[i] = (uint8_t)splitmix(rng);
    p[12] = 0x08; p[13] = 0x00;
    uint8_t *ip = p + 14;
    uint16_t ip_len = (uint16_t)(len - 14);
    ip[0] = 0x45; ip[2] = ip_len >> 8; ip[3] = ip_len & 0xff;
    ip[8] = 64; ip[9] = 17;
    ip[12] = src >> 24; ip[13] = src >> 16; ip[14] = src >> 8; ip[15] = src;
    ip[16] = dst >> 24; ip[17] = dst >> 16; ip[18] = dst >> 8; ip[19] = dst;
    uint16_t c = ip_checksum(ip);
    ip[10] = c >> 8; ip[11] = c & 0xff;
    for (size_t i = 42; i < len; i++) p[i] = (uint8_t)(i * 7 + src);
}

static void *work(void *arg) {
    struct worker *w = arg;
    const struct config *cfg = w->cfg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(w->core, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc != 0) {
        snprintf(w->error, sizeof w->error, "cannot pin to core %d: %s", w->core, strerror(rc));
        pthread_barrier_wait(w->barrier);
        return NULL;
    }
    size_t nb = cfg->buffers, bs = cfg->buffer_size, len = cfg->packet_len;
    uint8_t *rx = map(nb * bs);
    uint8_t *tx = map((size_t)TX_SLOTS * TX_SLOT_SIZE);
    struct fib_entry *fib = map(cfg->fib_entries * sizeof *fib);
    if (!rx || !tx || !fib) {
        snprintf(w->error, sizeof w->error, "cannot allocate %zu buffers of %zu bytes", nb, bs);
        pthread_barrier_wait(w->barrier);
        return NULL;
    }
    uint64_t rng = 0x5eed0000ull + (uint64_t)w->index;
    size_t mask = cfg->fib_entries - 1;
    /* Open-addressing hash table, half full; dst 0 marks an empty slot. */
    size_t routes = cfg->fib_entries / 2;
    uint32_t *known = malloc(routes * sizeof *known);
    for (size_t i = 0; i < routes; i++) {
        uint32_t dst;
        size_t slot;
        do {
            dst = (uint32_t)splitmix(&rng) | 1u;
            for (slot = hash32(dst) & mask; fib[slot].dst && fib[slot].dst != dst; slot = (slot + 1) & mask)
                ;
        } while (fib[slot].dst == dst);
        fib[slot].dst = dst;
        fib[slot].port = (uint16_t)(splitmix(&rng) % PORTS);
        for (int k = 0; k < 6; k++) fib[slot].mac[k] = (uint8_t)splitmix(&rng);
        known[i] = dst;
    }
    for (size_t b = 0; b < nb; b++) {
        /* Destinations are known routes, so every lookup must hit. */
        uint32_t dst = known[splitmix(&rng) % routes];
        make_packet(rx + b * bs, len, 0x0a000000u | (uint32_t)(b & 0xffffff), dst, &rng);
    }
    free(known);

    size_t last = 0, tx_slot = 0;
    uint64_t packets = 0, digest = 0, bad = 0, missed = 0;
    int measuring = 0;
    pthread_barrier_wait(w->barrier);
    double start = now(), t0 = start;
    for (;;) {
        for (int burst = 0; burst < 256; burst++) {
            last = last >= RING_STEP ? last - RING_STEP : last + nb - RING_STEP;
            uint8_t *p = rx + last * bs;
            uint8_t *ip = p + 14;
            bad += ip_checksum(ip) != 0;
            uint32_t dst = (uint32_t)ip[16] << 24 | (uint32_t)ip[17] << 16 | (uint32_t)ip[18] << 8 | ip[19];
            /* Hashed exact-match lookup with linear probing (entries are unique enough). */
            size_t slot = hash32(dst) & mask;
            while (fib[slot].dst != dst && fib[slot].dst != 0) slot = (slot + 1) & mask;
            const struct fib_entry *e = &fib[slot];
            missed += e->dst != dst;
            /* TTL: decrement (or refill at 1, so the steady state never drops packets);
             * RFC 1624 incremental update of the checksum for the TTL/protocol word. */
            uint16_t old = (uint16_t)(ip[8] << 8 | ip[9]);
            ip[8] = ip[8] > 1 ? ip[8] - 1 : 64;
            uint16_t new = (uint16_t)(ip[8] << 8 | ip[9]);
            uint32_t c = (uint16_t)~(ip[10] << 8 | ip[11]);
            c += (uint16_t)~old;
            c += new;
            while (c >> 16) c = (c & 0xffff) + (c >> 16);
            c = (uint16_t)~c;
            ip[10] = c >> 8; ip[11] = c & 0xff;
            memcpy(p + 6, p, 6);         /* our MAC becomes the source … */
            memcpy(p, e->mac, 6);        /* … the next hop's the destination */
            memcpy(tx + tx_slot * TX_SLOT_SIZE, p, len);
            tx_slot = (tx_slot + 1) % TX_SLOTS;
            w->port_count[e->port]++;
            digest = digest * 31 + e->port + ip[8];
        }
        packets += 256;
        double t = now();
        if (!measuring && t - start >= cfg->warmup) {
            measuring = 1;
            t0 = t;
            packets = 0;
            memset(w->port_count, 0, sizeof w->port_count);
        }
        if (measuring && t - t0 >= cfg->duration) {
            w->seconds = t - t0;
            break;
        }
    }
    w->packets = packets;
    w->digest = digest;
    uint64_t counted = 0;
    for (int k = 0; k < PORTS; k++) counted += w->port_count[k];
    uint64_t broken = 0;
    for (size_t b = 0; b < nb; b++) broken += ip_checksum(rx + b * bs + 14) != 0;
    w->valid = bad == 0 && broken == 0 && missed == 0 && counted == packets;
    if (!w->valid)
        snprintf(w->error, sizeof w->error, "validation failed: %llu bad checksums seen, %llu broken at end, "
                 "%llu route misses, %llu counted of %llu", (unsigned long long)bad, (unsigned long long)broken,
                 (unsigned long long)missed, (unsigned long long)counted, (unsigned long long)packets);
    munmap(rx, nb * bs);
    munmap(tx, (size_t)TX_SLOTS * TX_SLOT_SIZE);
    munmap(fib, cfg->fib_entries * sizeof *fib);
    return NULL;
}

static int usage(const char *msg) {
    fprintf(stderr, "router: %s\nusage: router --cores LIST [--duration S] [--warmup S] [--buffers N] "
            "[--buffer-size B] [--packet-len B] [--fib-entries N] [--pages base|huge]\n", msg);
    return 2;
}

int main(int argc, char **argv) {
    struct config cfg = {.ncores = 0, .duration = 2.0, .warmup = 0.3, .buffers = 3549, .buffer_size = 9216,
                         .packet_len = 172, .fib_entries = 65536};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage("missing value");
        if (!strcmp(a, "--cores")) {
            char *s = strdup(v), *tok, *save = NULL;
            for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (cfg.ncores == MAX_THREADS) return usage("too many cores");
                cfg.cores[cfg.ncores++] = atoi(tok);
            }
            free(s);
        } else if (!strcmp(a, "--duration")) cfg.duration = atof(v);
        else if (!strcmp(a, "--warmup")) cfg.warmup = atof(v);
        else if (!strcmp(a, "--buffers")) cfg.buffers = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--buffer-size")) cfg.buffer_size = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--packet-len")) cfg.packet_len = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--fib-entries")) cfg.fib_entries = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--pages")) {
            if (strcmp(v, "base") && strcmp(v, "huge")) return usage("--pages: base or huge");
            huge_pages = !strcmp(v, "huge");
        }
        else return usage("unknown option");
        i++;
    }
    if (cfg.ncores == 0) return usage("--cores is required (e.g. the output of: perflab cores --pick 3 -q)");
    if (cfg.duration <= 0 || cfg.duration > 3600 || cfg.warmup < 0) return usage("bad duration");
    if (cfg.packet_len < 64 || cfg.packet_len > 1500 || cfg.packet_len > cfg.buffer_size ||
        cfg.packet_len > TX_SLOT_SIZE) return usage("packet length must be 64..1500 bytes and fit a buffer");
    if (cfg.buffers < 2 || cfg.buffers % RING_STEP == 0) return usage("buffers must be ≥ 2 and not a multiple of 5");
    if (cfg.fib_entries < 16 || (cfg.fib_entries & (cfg.fib_entries - 1))) return usage("fib entries: a power of two");

    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)cfg.ncores);
    struct worker *w = calloc((size_t)cfg.ncores, sizeof *w);
    pthread_t *th = calloc((size_t)cfg.ncores, sizeof *th);
    for (int i = 0; i < cfg.ncores; i++) {
        w[i] = (struct worker){.cfg = &cfg, .core = cfg.cores[i], .index = i, .barrier = &barrier};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < cfg.ncores; i++) pthread_join(th[i], NULL);
    double total = 0;
    uint64_t digest = 0;
    int ok = 1;
    for (int i = 0; i < cfg.ncores; i++) {
        if (w[i].error[0]) {
            fprintf(stderr, "router: core %d: %s\n", w[i].core, w[i].error);
            ok = 0;
        } else {
            total += w[i].packets / w[i].seconds;
            digest ^= w[i].digest;
        }
    }
    printf("{\"cores\": [");
    for (int i = 0; i < cfg.ncores; i++) printf("%s%d", i ? ", " : "", cfg.cores[i]);
    printf("], \"threads\": %d, \"pkts_per_sec\": %.1f, \"per_core_pkts_per_sec\": [", cfg.ncores, total);
    for (int i = 0; i < cfg.ncores; i++)
        printf("%s%.1f", i ? ", " : "", w[i].seconds > 0 ? w[i].packets / w[i].seconds : 0.0);
    printf("], \"packet_len_bytes\": %zu, \"buffers\": %zu, \"buffer_size_bytes\": %zu, \"duration_s\": %.3f, "
           "\"pages\": \"%s\", \"digest\": \"%016llx\", \"validated\": %s}\n", cfg.packet_len, cfg.buffers,
           cfg.buffer_size, cfg.duration, huge_pages ? "huge" : "base", (unsigned long long)digest,
           ok ? "true" : "false");
    return ok ? 0 : 1;
}
