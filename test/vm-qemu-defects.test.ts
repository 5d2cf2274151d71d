/**
 * The VM lab tells QEMU's defects apart from the gateways' (test/support/qemu-guest.ts, knownQemuDefect): what a
 * source QEMU 10.0.2 left when its TLS bye race hit, as captured on this machine, must be named; the same frames
 * in a multifd thread (a normal TLS write) or an unrelated abort must not. No QEMU runs here.
 */
import { gdbFrames, knownQemuDefect } from './support/qemu-guest';

// gdb `thread apply all bt` of a source QEMU 10.0.2 that stopped answering its monitor (loopback, TLS + 4
// multifd channels, the target stopped, one multifd connection destroyed), cut to the main thread and one
// multifd thread writing to the same fd
const BT = `Thread 6 (Thread 0x7feda65fc6c0 (LWP 5446) "qemu-system-x86"):
#0  __libc_sendmsg (flags=0, msg=0x7feda65fafe0, fd=12) at ../sysdeps/unix/sysv/linux/sendmsg.c:28
#1  __libc_sendmsg (fd=12, msg=0x7feda65fafe0, flags=0) at ../sysdeps/unix/sysv/linux/sendmsg.c:25
#2  0x0000560c7da649a6 in ?? ()
#3  0x0000560c7da6ace7 in qio_channel_write ()
#9  0x00007fee01e3f191 in gnutls_record_send2 () from /lib/x86_64-linux-gnu/libgnutls.so.30
#10 0x0000560c7da7b245 in qcrypto_tls_session_write ()
#12 0x0000560c7da6bf6e in qio_channel_writev_full_all ()
#15 0x00007fee015951f5 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442

Thread 1 (Thread 0x7fee00ee1f00 (LWP 5317) "qemu-system-x86"):
#0  __libc_sendmsg (flags=0, msg=0x7ffcbf222e20, fd=12) at ../sysdeps/unix/sysv/linux/sendmsg.c:28
#3  0x0000560c7da6ace7 in qio_channel_write ()
#6  0x00007fee01e456a0 in ?? () from /lib/x86_64-linux-gnu/libgnutls.so.30
#8  0x00007fee01e3eb9d in gnutls_bye () from /lib/x86_64-linux-gnu/libgnutls.so.30
#9  0x0000560c7da7b51e in qcrypto_tls_session_bye ()
#11 0x0000560c7d873050 in multifd_send_shutdown ()
#14 0x0000560c7dc06516 in aio_bh_poll ()
#18 0x0000560c7dc07a48 in main_loop_wait ()
#19 0x0000560c7d845df9 in qemu_main_loop ()
[Inferior 1 (process 5317) detached]
`;

test('gdb frames by thread: named frames innermost first, the unnamed dropped', () => {
  const f = gdbFrames(BT);
  expect([...f.keys()]).toEqual(['5446', '5317']);
  expect(f.get('5317')).toEqual(['__libc_sendmsg', 'qio_channel_write', 'gnutls_bye', 'qcrypto_tls_session_bye', 'multifd_send_shutdown', 'aio_bh_poll', 'main_loop_wait', 'qemu_main_loop']);
  expect(f.get('5446')).toContain('gnutls_record_send2');
});

test('the main loop blocked in the TLS bye of a failed multifd migration is named as QEMU\'s defect', () => {
  const named = knownQemuDefect({ mainFrames: gdbFrames(BT).get('5317') });
  expect(named).toMatch(/^QEMU's defect, not the gateways' or the lab's: the TLS bye race of QEMU 10\.0 \(the main loop blocked in gnutls_bye\)/);
  expect(named).toMatch(/migration\/multifd\/tls: Cleanup BYE message processing on sender side/);
});

test('the abort it ends in is named from QEMU\'s stderr', () => {
  const log = "qemu-system-x86_64: util/error.c:68: error_setv: Assertion `*errp == NULL' failed.";
  expect(knownQemuDefect({ log })).toMatch(/the TLS bye race of QEMU 10\.0 \(the abort\)/);
});

test('a multifd thread writing, an idle main loop or another abort are not taken for it', () => {
  expect(knownQemuDefect({ mainFrames: gdbFrames(BT).get('5446') })).toBeUndefined();
  expect(knownQemuDefect({ mainFrames: ['ppoll', 'qemu_poll_ns', 'main_loop_wait', 'qemu_main_loop'] })).toBeUndefined();
  expect(knownQemuDefect({ log: 'qemu-system-x86_64: ../migration/ram.c:1234: ram_save_host_page: Assertion `0\' failed.' })).toBeUndefined();
  expect(knownQemuDefect({})).toBeUndefined();
});
