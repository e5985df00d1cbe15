/*
 * A QEMU TCG plugin that counts the instructions the emulated machine executes — the
 * lab router's instruction counter (its 24Kc has no performance counters QEMU models):
 * the count is a 64-bit integer at the start of the file named by `out=PATH`, shared
 * with QEMU's memory, so any process reads the live count (scripts/lab/vm --counters).
 *
 *   qemu-system-mipsel ... -plugin PATH/instructions.so,out=/tmp/router.count
 *
 * Built by scripts/lab/build with the host's cc. Debian's QEMU loads plugins but ships
 * no qemu-plugin.h, so the few entry points used are declared here from QEMU's plugin
 * ABI (version 1, QEMU 4.2 to 7.2).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
                                              enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static volatile uint64_t *count;

/* Each translated block adds its instruction count each time it runs: TCG emits the
 * addition inline, with no call into the plugin. */
static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
                                             (void *)count, qemu_plugin_tb_n_insns(tb));
}

__attribute__((visibility("default"))) int
qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info, int argc,
                    char **argv)
{
    (void)info;
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            path = argv[i] + 4;
        }
    }
    if (path == NULL || *path == '\0') {
        fprintf(stderr, "instructions plugin: needs out=PATH\n");
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, sizeof(uint64_t)) != 0) {
        perror(path);
        return -1;
    }
    void *map = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        perror(path);
        return -1;
    }
    count = map;
    *count = 0;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    return 0;
}
