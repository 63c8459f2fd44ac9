/*
 * insncount: lab's instruction profile of guest-marked sections, a QEMU TCG
 * plugin for the plugin API of QEMU 7.2 (version 1, qemu-plugin.h beside
 * this file, which is QEMU's own).
 *
 * The guest brackets each measured sample with two marker instructions
 * that are no-ops on real hardware. Between a start and a stop marker the
 * plugin counts, for every translation block's start address, the guest
 * instructions executed, and at the stop marker appends the section:
 *
 *   # section <n> id <id> total <instructions> tbs <lines>
 *   ffffffff81234560 12345
 *   ...
 *
 * Markers, matched at translation time:
 *   x86_64:  nopl 0x4c41II31(%rax) (start), nopl 0x4c41II30(%rax) (stop):
 *            0f 1f 80 31|30 II 41 4c, the architected multi-byte NOP
 *   aarch64: movz xzr, #(cmd << 8 | II), lsl #32: a write to the zero
 *            register; start 0xd2c6201f | II << 5, stop 0xd2c6001f | II << 5
 *
 * Every instruction gets an inline add of 1 to the counter of its block's
 * start address (no helper call): it matches QEMU's instruction counter
 * but for one more per exception taken (a faulting instruction runs again).
 * Counting per block instead undercounts nothing but overcounts a block
 * left early, which under icount every device access does. Counters are
 * plain adds: lab profiles one vCPU. User addresses of two processes share
 * a counter. The output path cannot hold a comma (QEMU splits on it).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu-plugin.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

enum { CMD_STOP = 0x30, CMD_START = 0x31 };

typedef struct {
	uint64_t count; /* instructions executed since the plugin loaded */
	uint64_t base;  /* count at the section's start */
	uint64_t vaddr;
} Counter;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool x86;
static FILE *out;
static bool active;
static int active_id;
static uint64_t sections, unmatched;

/* counters: an open-addressing table of Counter*, keyed by vaddr. */
static Counter **table;
static size_t cap, used;

static size_t slot(uint64_t vaddr, size_t n)
{
	return (size_t)((vaddr * 0x9E3779B97F4A7C15ull) >> 17) & (n - 1);
}

static void grow(void)
{
	size_t n = cap ? cap * 2 : 1 << 16;
	Counter **t = calloc(n, sizeof(*t));
	if (!t) {
		abort();
	}
	for (size_t i = 0; i < cap; i++) {
		if (table[i]) {
			size_t j = slot(table[i]->vaddr, n);
			while (t[j]) {
				j = (j + 1) & (n - 1);
			}
			t[j] = table[i];
		}
	}
	free(table);
	table = t;
	cap = n;
}

/* The counter of vaddr, made on first use; lock held. */
static Counter *counter(uint64_t vaddr)
{
	if (2 * (used + 1) > cap) {
		grow();
	}
	size_t j = slot(vaddr, cap);
	while (table[j] && table[j]->vaddr != vaddr) {
		j = (j + 1) & (cap - 1);
	}
	if (!table[j]) {
		table[j] = calloc(1, sizeof(Counter));
		if (!table[j]) {
			abort();
		}
		table[j]->vaddr = vaddr;
		used++;
	}
	return table[j];
}

/* The marker an instruction is, packed as cmd << 8 | id; -1: none. */
static int marker(struct qemu_plugin_insn *insn)
{
	size_t n = qemu_plugin_insn_size(insn);
	const uint8_t *b = qemu_plugin_insn_data(insn);

	if (x86) {
		if (n != 7 || b[0] != 0x0f || b[1] != 0x1f || b[2] != 0x80 || b[5] != 0x41 || b[6] != 0x4c ||
		    (b[3] != CMD_START && b[3] != CMD_STOP)) {
			return -1;
		}
		return b[3] << 8 | b[4];
	}
	if (n != 4) {
		return -1;
	}
	uint32_t w = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	if ((w & 0xffe0001f) != 0xd2c0001f) {
		return -1;
	}
	uint32_t imm = (w >> 5) & 0xffff;
	if ((imm >> 8) != CMD_START && (imm >> 8) != CMD_STOP) {
		return -1;
	}
	return (int)imm;
}

/* Appends the section now ending; lock held. */
static void write_section(const char *note)
{
	uint64_t total = 0, lines = 0;

	for (size_t i = 0; i < cap; i++) {
		if (table[i] && table[i]->count != table[i]->base) {
			total += table[i]->count - table[i]->base;
			lines++;
		}
	}
	sections++;
	fprintf(out, "# section %" PRIu64 " id %d total %" PRIu64 " tbs %" PRIu64 "%s%s\n", sections, active_id, total, lines,
		note ? " " : "", note ? note : "");
	for (size_t i = 0; i < cap; i++) {
		if (table[i] && table[i]->count != table[i]->base) {
			fprintf(out, "%" PRIx64 " %" PRIu64 "\n", table[i]->vaddr, table[i]->count - table[i]->base);
		}
	}
	fflush(out);
}

static void marker_exec(unsigned int vcpu, void *udata)
{
	int cmd = (int)(uintptr_t)udata >> 8, id = (int)(uintptr_t)udata & 0xff;

	pthread_mutex_lock(&lock);
	if (!out) {
		/* after exit */
	} else if (cmd == CMD_START) {
		if (active) {
			fprintf(out, "# warning: start %d while section %d was open: restarted\n", id, active_id);
		}
		for (size_t i = 0; i < cap; i++) {
			if (table[i]) {
				table[i]->base = table[i]->count;
			}
		}
		active = true;
		active_id = id;
	} else if (active) {
		write_section(NULL);
		active = false;
	} else {
		unmatched++;
	}
	pthread_mutex_unlock(&lock);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);

	pthread_mutex_lock(&lock);
	Counter *c = counter(qemu_plugin_tb_vaddr(tb));
	pthread_mutex_unlock(&lock);
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		int m = marker(insn);
		if (m >= 0) {
			qemu_plugin_register_vcpu_insn_exec_cb(insn, marker_exec, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)m);
		} else {
			qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &c->count, 1);
		}
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	pthread_mutex_lock(&lock);
	if (active) {
		write_section("incomplete"); /* the guest never reached its stop */
		active = false;
	}
	if (unmatched) {
		fprintf(out, "# warning: %" PRIu64 " stop markers without a start\n", unmatched);
	}
	fprintf(out, "# end sections %" PRIu64 "\n", sections);
	fclose(out);
	out = NULL;
	pthread_mutex_unlock(&lock);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	const char *path = NULL;

	if (!strcmp(info->target_name, "x86_64")) {
		x86 = true;
	} else if (strcmp(info->target_name, "aarch64")) {
		fprintf(stderr, "insncount: target %s: lab profiles x86_64 and aarch64 guests\n", info->target_name);
		return -1;
	}
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			path = argv[i] + 4;
		} else {
			fprintf(stderr, "insncount: unknown argument %s (want out=FILE)\n", argv[i]);
			return -1;
		}
	}
	if (!path) {
		fprintf(stderr, "insncount: no out=FILE\n");
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	fprintf(out, "# insncount %s api %d\n", info->target_name, QEMU_PLUGIN_VERSION);
	fflush(out);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
