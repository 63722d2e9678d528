# kselftest_harness tests (run in the VM) and host unit tests.
SELFTESTS :=
HOST_TESTS :=
