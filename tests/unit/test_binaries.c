/* binaries.c: build ids from ELF notes, and keeping the mapped files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "scratch_dir.h"

#include "binaries.h"


/* Appends one note (name padded, desc padded) to buf at *len. */
static void add_note(uint8_t *buf, size_t *len, uint32_t type, const char *name,
                     const uint8_t *desc, uint32_t desc_len)
{
    ElfW(Nhdr) h = {(uint32_t)strlen(name) + 1, desc_len, type};
    memcpy(buf + *len, &h, sizeof h);
    *len += sizeof h;
    memset(buf + *len, 0, (h.n_namesz + 3) & ~3u);
    memcpy(buf + *len, name, h.n_namesz);
    *len += (h.n_namesz + 3) & ~3u;
    memset(buf + *len, 0, (desc_len + 3) & ~3u);
    memcpy(buf + *len, desc, desc_len);
    *len += (desc_len + 3) & ~3u;
}

static void test_build_id_after_other_notes(void **state)
{
    (void)state;
    uint8_t buf[256], abi[16] = {0}, id[20];
    for (unsigned i = 0; i < sizeof id; i++)
        id[i] = (uint8_t)(i * 17 + 1);
    size_t len = 0;
    add_note(buf, &len, NT_GNU_ABI_TAG, "GNU", abi, sizeof abi);
    add_note(buf, &len, NT_GNU_BUILD_ID, "XYZW", id, 3); /* another vendor's type 3 */
    add_note(buf, &len, NT_GNU_BUILD_ID, "GNU", id, sizeof id);
    char hex[64];
    assert_int_equal(pi_build_id_hex(buf, len, hex, sizeof hex), 40);
    assert_string_equal(hex, "0112233445566778899aabbccddeef0011223344");
    /* too small a buffer, a truncated segment, no build id: -1 */
    assert_int_equal(pi_build_id_hex(buf, len, hex, 40), -1);
    assert_int_equal(pi_build_id_hex(buf, len - 4, hex, sizeof hex), -1);
    len = 0;
    add_note(buf, &len, NT_GNU_ABI_TAG, "GNU", abi, sizeof abi);
    assert_int_equal(pi_build_id_hex(buf, len, hex, sizeof hex), -1);
    assert_int_equal(pi_build_id_hex(buf, 0, hex, sizeof hex), -1);
}

static void test_path(void **state)
{
    (void)state;
    char path[64];
    assert_int_equal(pi_binaries_path(path, sizeof path, "/p", "ab12", "/usr/bin/python3.11"), 0);
    assert_string_equal(path, "/p/binaries/ab12/python3.11");
    assert_int_equal(pi_binaries_path(path, sizeof path, "/p", "ab12", "/usr/bin/"), -1);
    assert_int_equal(pi_binaries_path(path, 16, "/p", "ab12", "/usr/bin/python3.11"), -1);
}

/* The build id of this test program, read from its mapped notes. */
static int own_id(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    if (info->dlpi_name[0] != '\0')
        return 0;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_NOTE &&
            pi_build_id_hex((const uint8_t *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr),
                            info->dlpi_phdr[i].p_memsz, arg, 129) > 0)
            return 1;
    return 0;
}

static int same_file_contents(const char *a, const char *b)
{
    char cmd[2 * PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", a, b);
    return system(cmd) == 0;
}

static void test_keeps_the_program_once(void **state)
{
    (void)state;
    char hex[129] = "", err[512] = "", self[PATH_MAX], kept[PATH_MAX];
    assert_int_equal(dl_iterate_phdr(own_id, hex), 1);
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = '\0';
    int copied = pi_binaries_keep(dir, err, sizeof err);
    assert_true(copied >= 2); /* the program and libc at least */
    assert_int_equal(pi_binaries_path(kept, sizeof kept, dir, hex, self), 0);
    assert_true(same_file_contents(self, kept));
    struct stat st;
    assert_int_equal(stat(kept, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* once per build id: a second process (or call) copies nothing */
    assert_int_equal(pi_binaries_keep(dir, err, sizeof err), 0);
    /* no temporary file is left behind */
    char cmd[PATH_MAX];
    snprintf(cmd, sizeof cmd, "test -z \"$(find %s -name '.*.tmp')\"", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_unwritable_directory_is_one_reason(void **state)
{
    (void)state;
    char err[512] = "";
    if (geteuid() == 0) { /* root writes anywhere: a file in the way instead */
        char blocker[PATH_MAX];
        snprintf(blocker, sizeof blocker, "%s/blocked", dir);
        assert_int_equal(mkdir(blocker, 0700), 0);
        char file[PATH_MAX + 16];
        snprintf(file, sizeof file, "%s/binaries", blocker);
        int fd = open(file, O_CREAT | O_WRONLY, 0600);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(pi_binaries_keep(blocker, err, sizeof err), -1);
    } else {
        assert_int_equal(pi_binaries_keep("/proc", err, sizeof err), -1);
    }
    assert_non_null(strstr(err, "cannot create"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_id_after_other_notes),
        cmocka_unit_test(test_path),
        cmocka_unit_test(test_keeps_the_program_once),
        cmocka_unit_test(test_unwritable_directory_is_one_reason),
    };
    return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
