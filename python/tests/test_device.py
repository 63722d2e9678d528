# SPDX-License-Identifier: MIT
"""vtpu's device API on the cpu backend and, where it exists (a guest
with vtpu.ko loaded), on /dev/vtpu0: buffers mapped as numpy arrays,
commands against numpy, fences, dma-buf sharing, and the errors.

Sizes stay small: a guest's floating point is far slower than the host's.
"""
import errno
import gc
import os
import select
import time

import numpy as np
import pytest

import vtpu
from vtpu._ffi import ffi, lib

NODE = "/dev/vtpu0"


@pytest.fixture(params=["cpu", NODE])
def dev(request):
    if request.param != "cpu" and not os.path.exists(request.param):
        pytest.skip("%s does not exist (vtpu.ko not loaded)"
                    % request.param)
    d = vtpu.Device(request.param)
    yield d
    d.close()


@pytest.fixture
def node():
    if not os.path.exists(NODE):
        pytest.skip("%s does not exist (vtpu.ko not loaded)" % NODE)
    d = vtpu.Device(NODE)
    yield d
    d.close()


def run(dev, cb, **kw):
    """Submit on a fresh queue and wait; the Job."""
    job = dev.queue().submit(cb, **kw)
    assert job.wait(timeout=60)
    return job


def rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(
        np.float32)


def address(buf):
    return int(ffi.cast("uintptr_t", buf._bo.map))


# ---- devices ---------------------------------------------------------------

def test_devices_lists_nodes_in_numeric_order():
    found = vtpu.devices()
    assert all(os.path.exists(p) for p in found)
    assert [int(p[len("/dev/vtpu"):]) for p in found] == sorted(
        int(p[len("/dev/vtpu"):]) for p in found)
    assert len(found) == len([p for p in os.listdir("/dev")
                              if p.startswith("vtpu") and p[4:].isdigit()])


def test_open_missing_node_says_why():
    with pytest.raises(vtpu.VtpuError) as e:
        vtpu.Device("/dev/vtpu4095")
    assert e.value.errno == errno.ENOENT
    hint = ffi.string(lib.vtpu_open_hint(errno.ENOENT)).decode()
    assert hint.strip() and hint in str(e.value)
    assert "/dev/vtpu4095" in str(e.value)


def test_params(dev):
    info = dev.info
    assert set(info) <= set(vtpu.PARAMS)
    assert info["api_version"] >= lib.VTPU_API_VERSION
    assert dev.param("api_version") == dev.param("VTPU_PARAM_API_VERSION") \
        == dev.param(lib.VTPU_PARAM_API_VERSION) == info["api_version"]
    assert dev.param("simd_level") in (lib.VTPU_SIMD_SCALAR,
                                       lib.VTPU_SIMD_AVX2,
                                       lib.VTPU_SIMD_AVX512)
    with pytest.raises(ValueError, match="unknown parameter"):
        dev.param("no_such_param")
    if dev.is_cpu:
        assert info["simd_level"] == lib.vtpu_cpu_simd(dev._core.cpu)
        with pytest.raises(vtpu.VtpuError):
            dev.param("mem_cap")
    else:
        assert info["device_index"] == int(dev.path[len("/dev/vtpu"):])
        assert info["mem_cap"] >= info["mem_used"]


def test_fileno(dev):
    if dev.is_cpu:
        with pytest.raises(vtpu.VtpuError) as e:
            dev.fileno()
        assert e.value.errno == errno.ENODEV
    else:
        assert os.path.samefile("/proc/self/fd/%d" % dev.fileno(), dev.path)


# ---- buffers ---------------------------------------------------------------

def test_buffer_shape_dtype_and_size(dev):
    b = dev.buffer((3, 5), "int32")
    assert b.array.shape == (3, 5) and b.array.dtype == np.int32
    assert b.nbytes == 60 and b.size >= 60 and b.size % 4096 == 0
    assert not b.array.any()                    # zeroed
    raw = dev.buffer(nbytes=10)
    assert raw.array.shape == (10,) and raw.array.dtype == np.uint8
    if dev.is_cpu:
        assert b.handle == 0
    else:
        assert b.handle != raw.handle


def test_buffer_array_is_the_mapping(dev):
    b = dev.buffer((8, 4))
    a = b.array
    assert a is b.array
    assert a.ctypes.data == address(b)
    assert np.asarray(b).ctypes.data == address(b)


def test_array_writes_reach_the_device_and_back(dev):
    src, dst = dev.buffer((16,)), dev.buffer((16,))
    seen = dst.array                  # taken before the job, never re-read
    src.array[:] = np.arange(16, dtype=np.float32)
    run(dev, vtpu.CommandBuffer(dev).copy(dst, src))
    assert np.array_equal(seen, np.arange(16))
    run(dev, vtpu.CommandBuffer(dev).fill((dst, 32), 7.5, count=4))
    assert np.array_equal(seen[8:12], [7.5] * 4)
    assert np.array_equal(seen[:8], np.arange(8))
    assert seen.ctypes.data == address(dst)


def test_gemm_matches_numpy(dev):
    m, n, k = 12, 20, 9
    a, b, c, bias = (dev.buffer(s) for s in ((m, k), (k, n), (m, n), (n,)))
    a.array[:], b.array[:], bias.array[:] = (rand((m, k), 1), rand((k, n), 2),
                                             rand(n, 3))
    run(dev, vtpu.CommandBuffer(dev).gemm(a, b, c))
    assert np.allclose(c.array, a.array @ b.array, rtol=1e-4, atol=1e-5)

    # with bias and relu, B transposed, and beta accumulating into C
    bt = dev.buffer((n, k))
    bt.array[:] = b.array.T
    before = c.array.copy()
    run(dev, vtpu.CommandBuffer(dev).gemm(a, bt, c, trans_b=True, alpha=2.0,
                                          beta=1.0))
    assert np.allclose(c.array, 2 * a.array @ b.array + before, rtol=1e-4,
                       atol=1e-5)
    run(dev, vtpu.CommandBuffer(dev).gemm(a, b, c, bias, relu=True))
    want = np.maximum(a.array @ b.array + bias.array, 0)
    assert np.allclose(c.array, want, rtol=1e-4, atol=1e-5)
    assert (c.array == 0).any() and (c.array > 0).any()


def test_fill_copy_elementwise(dev):
    n = 64
    x, y, z = dev.buffer(n), dev.buffer(n), dev.buffer(n)
    x.array[:], y.array[:] = rand(n, 4), rand(n, 5)
    cb = vtpu.CommandBuffer(dev)
    cb.elementwise("add", x, y, z)
    job = run(dev, cb)
    assert np.allclose(z.array, x.array + y.array)
    assert job.status == "done"

    cb.reset()
    assert len(cb) == 0 and cb.buffers == ()
    cb.elementwise("axpby", x, y, z, alpha=0.5, beta=-2.0)
    cb.elementwise("relu", z, None, z)
    run(dev, cb)
    assert np.allclose(z.array, np.maximum(0.5 * x.array - 2 * y.array, 0),
                       atol=1e-6)

    cb = vtpu.CommandBuffer(dev).fill(z, 3.0).copy((y, 16), (z, 0),
                                                   nbytes=32)
    assert len(cb) == 2 and cb.buffers == (z, y)
    run(dev, cb)
    assert np.array_equal(z.array, [3.0] * n)
    assert np.array_equal(y.array[4:12], [3.0] * 8)


def test_reduce_and_softmax_xent(dev):
    m, n = 6, 5
    x, cols, rows = dev.buffer((m, n)), dev.buffer(n), dev.buffer(m)
    x.array[:] = rand((m, n), 6)
    run(dev, vtpu.CommandBuffer(dev).reduce("cols", x, cols)
        .reduce("rows", x, rows, alpha=2.0))
    assert np.allclose(cols.array, x.array.sum(0), atol=1e-5)
    assert np.allclose(rows.array, 2 * x.array.sum(1), atol=1e-5)

    labels = dev.buffer(m, "uint32")
    loss, correct = dev.buffer(1), dev.buffer(1, "uint32")
    probs = dev.buffer((m, n))
    labels.array[:] = [0, 1, 2, 3, 4, 0]
    run(dev, vtpu.CommandBuffer(dev).softmax_xent(x, labels, loss, correct,
                                                  probs=probs))
    lg = x.array.astype(np.float64)
    p = np.exp(lg - lg.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    assert np.allclose(probs.array, p, atol=1e-5)
    assert np.isclose(loss.array[0],
                      -np.log(p[np.arange(m), labels.array]).mean(),
                      rtol=1e-4)
    assert correct.array[0] == (lg.argmax(1) == labels.array).sum()


def test_argmax_matches_numpy(dev):
    m, n = 7, 9
    x, y = dev.buffer((m, n)), dev.buffer(m, "uint32")
    a = rand((m, n), 13)
    a[1] = [1, 3, 3, 2, 3, 0, 0, 0, 0]          # ties: the first
    a[2] = -np.inf                              # all -inf: 0
    a[3, [2, 5]] = np.nan                       # the first NaN
    a[4, [0, 6]] = np.inf                       # the first +inf
    a[4, 8] = np.nan                            # NaN beats +inf
    a[5] = 2.5                                  # all equal: 0
    a[6, n - 1] = 10.0                          # the last column
    x.array[:] = a
    run(dev, vtpu.CommandBuffer(dev).argmax(x, y))
    assert list(y.array) == list(np.argmax(x.array, axis=1))
    assert list(y.array[1:6]) == [1, 0, 2, 8, 0]
    # rows of 5 in rows of 9 (ldx > n), the logits' argmax as the next
    # step's embedding ids: greedy decoding in one stream
    table, emb = dev.buffer((5, 3)), dev.buffer((m, 3))
    table.array[:] = rand((5, 3), 14)
    run(dev, vtpu.CommandBuffer(dev).argmax(x, y, m=m, n=5, ldx=n)
        .embedding(y, table, emb))
    want = np.argmax(x.array[:, :5], axis=1)
    assert list(y.array) == list(want)
    assert np.array_equal(emb.array, table.array[want])


def test_embedding_and_its_gradient(dev):
    n, vocab, dim = 12, 5, 7
    ids, table = dev.buffer(n, "uint32"), dev.buffer((vocab, dim))
    y, dy, dt = dev.buffer((n, dim)), dev.buffer((n, dim)), \
        dev.buffer((vocab, dim))
    ids.array[:] = [0, 1, 4, 4, 5, 0xffffffff, 2, 2, 2, 3, 1, 0]
    table.array[:] = rand((vocab, dim), 7)
    dy.array[:] = rand((n, dim), 8)
    run(dev, vtpu.CommandBuffer(dev).embedding(ids, table, y)
        .embedding_grad(ids, dy, dt))
    ok = ids.array < vocab
    want = np.zeros((n, dim), np.float32)
    want[ok] = table.array[ids.array[ok]]
    assert np.array_equal(y.array, want)
    grad = np.zeros((vocab, dim))
    np.add.at(grad, ids.array[ok], dy.array[ok].astype(np.float64))
    assert np.allclose(dt.array, grad, atol=1e-6)
    # accumulate: the same sums again, on top
    run(dev, vtpu.CommandBuffer(dev).embedding_grad(ids, dy, dt,
                                                    accumulate=True))
    assert np.allclose(dt.array, 2 * grad, atol=1e-5)


def test_gemm_batched(dev):
    bt, m, n, k = 3, 5, 6, 4
    q, kk, v = dev.buffer((bt, m, k)), dev.buffer((bt, n, k)), \
        dev.buffer((bt, n, 2))
    s, ctx = dev.buffer((bt, m, n)), dev.buffer((bt, m, 2))
    w = dev.buffer((k, n))
    q.array[:] = rand((bt, m, k), 9)
    kk.array[:] = rand((bt, n, k), 10)
    v.array[:] = rand((bt, n, 2), 11)
    w.array[:] = rand((k, n), 12)
    # scores = Q K^T / 2, then context = scores V
    run(dev, vtpu.CommandBuffer(dev).gemm_batched(q, kk, s, trans_b=True,
                                                  alpha=0.5)
        .gemm_batched(s, v, ctx))
    sc = 0.5 * np.einsum("bmk,bnk->bmn", q.array, kk.array)
    assert np.allclose(s.array, sc, atol=1e-5)
    assert np.allclose(ctx.array, np.einsum("bmn,bnj->bmj", s.array,
                                            v.array), atol=1e-5)
    # one B (2-D) for every product, beta 1
    before = s.array.copy()
    run(dev, vtpu.CommandBuffer(dev).gemm_batched(q, w, s, beta=1.0))
    assert np.allclose(s.array, before + q.array @ w.array, atol=1e-5)
    with pytest.raises(ValueError):
        vtpu.CommandBuffer(dev).gemm_batched(q, v, s)


def _masked_softmax(x, valid):
    y = np.zeros_like(x)
    for r, v in enumerate(valid):
        if v:
            e = np.exp(x[r, :v] - x[r, :v].max())
            y[r, :v] = e / e.sum()
    return y


def test_softmax_masked_and_grad(dev):
    m, n, g = 6, 5, 3
    x, y = dev.buffer((m, n)), dev.buffer((m, n))
    dy, dx = dev.buffer((m, n)), dev.buffer((m, n))
    lengths = dev.buffer(2, "uint32")
    x.array[:] = rand((m, n), 7)
    dy.array[:] = rand((m, n), 8)
    lengths.array[:] = [2, 9]
    run(dev, vtpu.CommandBuffer(dev)
        .softmax(x, y, lengths=lengths, rows_per_group=g, causal=True)
        .softmax_grad(y, dy, dx, lengths=lengths, rows_per_group=g,
                      causal=True))
    valid = [min(2 if r < g else n, r % g + 1) for r in range(m)]
    want = _masked_softmax(x.array.astype(np.float64), valid)
    assert np.allclose(y.array, want, atol=1e-6)
    yy, d = want, dy.array.astype(np.float64)
    wdx = yy * (d - (d * yy).sum(1, keepdims=True))
    assert np.allclose(dx.array, wdx, atol=1e-6)
    assert not y.array[0, 1:].any() and not dx.array[0, 1:].any()


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_lstm_cell_and_grad(dev):
    b, h = 3, 5
    z, act, dz = (dev.buffer((b, 4 * h)) for _ in range(3))
    cp, c, tc, hh, dh, dcn, dcp = (dev.buffer((b, h)) for _ in range(7))
    z.array[:] = rand((b, 4 * h), 11) * 3
    cp.array[:] = rand((b, h), 12)
    dh.array[:] = rand((b, h), 13)
    dcn.array[:] = rand((b, h), 14)
    run(dev, vtpu.CommandBuffer(dev)
        .lstm_cell(z, cp, act, c, tc, hh)
        .lstm_cell_grad(act, cp, tc, dh, dcn, dz, dcp))
    zz = z.array.astype(np.float64)
    i, f = _sigmoid(zz[:, :h]), _sigmoid(zz[:, h:2 * h])
    g, o = np.tanh(zz[:, 2 * h:3 * h]), _sigmoid(zz[:, 3 * h:])
    wc = f * cp.array + i * g
    t = np.tanh(wc)
    assert np.allclose(act.array, np.hstack([i, f, g, o]), atol=1e-6)
    assert np.allclose(c.array, wc, atol=1e-6)
    assert np.allclose(tc.array, t, atol=1e-6)
    assert np.allclose(hh.array, o * t, atol=1e-6)
    d = dh.array * o * (1 - t * t) + dcn.array
    want = np.hstack([d * g * i * (1 - i), d * cp.array * f * (1 - f),
                      d * i * (1 - g * g), dh.array * t * o * (1 - o)])
    assert np.allclose(dz.array, want, atol=1e-6)
    assert np.allclose(dcp.array, d * f, atol=1e-6)
    # in place: act over z, dgates over act, dc_prev over dc_next
    got = dz.array.copy(), dcp.array.copy()
    z.array[:] = zz
    run(dev, vtpu.CommandBuffer(dev)
        .lstm_cell(z, cp, z, c, tc, hh)
        .lstm_cell_grad(z, cp, tc, dh, dcn, z, dcn))
    assert np.array_equal(z.array, got[0])
    assert np.array_equal(dcn.array, got[1])
    # planes [4][B][H]: the same bits
    zp, dzp = dev.buffer((4, b, h)), dev.buffer((4, b, h))
    dcn.array[:] = rand((b, h), 14)
    zp.array[:] = zz.reshape(b, 4, h).transpose(1, 0, 2)
    run(dev, vtpu.CommandBuffer(dev)
        .lstm_cell(zp, cp, zp, c, tc, hh, row_stride=h,
                   gate_stride=b * h)
        .lstm_cell_grad(zp, cp, tc, dh, dcn, dzp, dcp, row_stride=h,
                        gate_stride=b * h))
    assert np.array_equal(dzp.array.transpose(1, 0, 2).reshape(b, 4 * h),
                          got[0])
    assert np.array_equal(dcp.array, got[1])
    # rejected: a row stride below 4H with the gates side by side
    with pytest.raises(vtpu.VtpuError):
        run(dev, vtpu.CommandBuffer(dev)
            .lstm_cell(z, cp, act, c, tc, hh, row_stride=4 * h - 1))
    with pytest.raises(ValueError):
        vtpu.CommandBuffer(dev).lstm_cell(z, (cp, 0), act, c, tc, hh)


def test_softmax_xent_mean_valid(dev):
    m, n = 6, 4
    x, d = dev.buffer((m, n)), dev.buffer((m, n))
    labels = dev.buffer(m, "uint32")
    loss, correct = dev.buffer(1), dev.buffer(1, "uint32")
    x.array[:] = rand((m, n), 9)
    labels.array[:] = [0, n, 3, 7, 1, 2]     # rows 1 and 3: padding
    run(dev, vtpu.CommandBuffer(dev).softmax_xent(
        x, labels, loss, correct, dlogits=d, mean_valid=True))
    ok = labels.array < n
    lg = x.array.astype(np.float64)
    p = np.exp(lg - lg.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    lab = np.where(ok, labels.array, 0)
    want = -np.log(p[np.arange(m), lab])[ok].mean()
    assert np.isclose(loss.array[0], want, rtol=1e-5)
    onehot = np.eye(n)[lab]
    wd = np.where(ok[:, None], (p - onehot) / ok.sum(), 0)
    assert np.allclose(d.array, wd, atol=1e-6)


# ---- fences ----------------------------------------------------------------

def test_fence_of_a_done_job(dev):
    b = dev.buffer(4)
    job = dev.queue().submit(vtpu.CommandBuffer(dev).fill(b, 1.0))
    with job.fence as f:
        assert f.wait(timeout=30) is True
        assert f.signalled
        r, _, _ = select.select([f], [], [], 5)
        assert r == [f]
        assert job.wait(0) is True
    assert f.closed
    with pytest.raises(vtpu.VtpuError):
        f.fileno()
    assert dev.queue().submit(vtpu.CommandBuffer(dev).fill(b, 2.0),
                              out_fence=False).fence is None


def _long_job(dev, seconds):
    """A command buffer and a repeat count whose job runs for at least
    this long on this device: a GEMM, repeated more each time."""
    n = 64
    a, c = dev.buffer((n, n)), dev.buffer((n, n))
    a.array[:] = np.eye(n, dtype=np.float32)
    cb = vtpu.CommandBuffer(dev).gemm(a, a, c)
    q = dev.queue()
    repeat = 1
    while True:
        t0 = time.monotonic()
        assert q.submit(cb, repeat=repeat, out_fence=False).wait()
        if time.monotonic() - t0 >= seconds:
            return cb, repeat
        if repeat * 4 > dev.param("max_repeat"):
            pytest.skip("no job of this device lasts %g s" % seconds)
        repeat *= 4


def test_fence_timeout_and_select(node):
    cb, repeat = _long_job(node, 0.1)
    job = node.queue().submit(cb, repeat=repeat)
    fence = job.fence
    t0 = time.monotonic()
    assert fence.wait(timeout=0.002) is False
    assert time.monotonic() - t0 >= 0.002
    assert job.wait(timeout=0) is False
    assert fence.wait() is True
    assert fence.signalled
    assert select.select([fence], [], [], 5)[0] == [fence]
    assert job.wait(timeout=5) is True


def test_in_fence_orders_jobs_across_queues(dev):
    a, b = dev.buffer(256), dev.buffer(256)
    first = dev.queue().submit(vtpu.CommandBuffer(dev).fill(a, 4.0))
    second = dev.queue().submit(vtpu.CommandBuffer(dev).copy(b, a),
                                in_fence=first.fence)
    assert second.wait(timeout=30)
    assert np.array_equal(b.array, [4.0] * 256)


def test_job_timeout_is_an_error(node):
    cb, repeat = _long_job(node, 0.1)
    job = node.queue(timeout_ms=1).submit(cb, repeat=repeat)
    with pytest.raises(vtpu.VtpuError) as e:
        job.wait()
    assert e.value.status == "timed out" and "timed out" in str(e.value)
    assert e.value.errno not in (0, None)
    with pytest.raises(vtpu.VtpuError):
        job.fence.wait()


# ---- dma-bufs --------------------------------------------------------------

def test_export_import_shares_memory(node):
    a = node.buffer((32,))
    fd = a.export()
    try:
        imported = node.import_buffer(fd, (32,))
        others = [vtpu.Device(p) for p in vtpu.devices()[1:2]]
        shared = [d.import_buffer(fd, (32,)) for d in others]
    finally:
        os.close(fd)
    a.array[:] = np.arange(32)
    assert np.array_equal(imported.array, np.arange(32))
    run(node, vtpu.CommandBuffer(node).fill(imported, -1.0, count=8))
    assert np.array_equal(a.array[:8], [-1.0] * 8)
    for d, s in zip(others, shared):
        assert np.array_equal(s.array[:9], [-1.0] * 8 + [8.0])
        run(d, vtpu.CommandBuffer(d).fill((s, 124), 5.0, count=1))
        assert a.array[31] == 5.0
        d.close()
    # same device: the same handle, which closing one Buffer keeps open
    assert imported.handle == a.handle
    imported.close()
    run(node, vtpu.CommandBuffer(node).fill(a, 2.0))
    assert np.array_equal(a.array, [2.0] * 32)


def test_import_checks_the_size(node):
    a = node.buffer(nbytes=4096)
    fd = a.export()
    try:
        with pytest.raises(ValueError, match="do not fit"):
            node.import_buffer(fd, (4097,), "uint8")
        whole = node.import_buffer(fd)
        assert whole.array.shape == (4096,)
    finally:
        os.close(fd)


def test_cpu_buffers_are_not_dma_bufs():
    with vtpu.Device("cpu") as cpu:
        with pytest.raises(vtpu.VtpuError) as e:
            cpu.buffer(4).export()
        assert e.value.errno == errno.EOPNOTSUPP and "dma-buf" in str(e.value)
        r, w = os.pipe()
        try:
            with pytest.raises(vtpu.VtpuError):
                cpu.import_buffer(r)
        finally:
            os.close(r)
            os.close(w)


# ---- errors ----------------------------------------------------------------

def test_bad_buffer_requests(dev):
    for shape in [(0, 3), (-1,), (2, 0)]:
        with pytest.raises(ValueError, match="positive"):
            dev.buffer(shape)
    with pytest.raises(ValueError):
        dev.buffer((2,), nbytes=8)
    with pytest.raises(ValueError):
        dev.buffer(nbytes=0)
    with pytest.raises(TypeError):
        dev.buffer((2,), "not-a-dtype")
    assert dev.buffer(()).array.shape == ()


def test_wrong_dtype_or_shape(dev):
    a, b, c = dev.buffer((4, 3)), dev.buffer((3, 5)), dev.buffer((4, 5))
    cb = vtpu.CommandBuffer(dev)
    with pytest.raises(ValueError, match="disagree on k"):
        cb.gemm(a, c, c)
    with pytest.raises(ValueError, match="disagree on m"):
        cb.gemm(a, b, dev.buffer((5, 5)))
    with pytest.raises(ValueError, match="give m"):
        cb.gemm((a, 0), (b, 0), (c, 0), n=5, k=3)
    d64 = dev.buffer((4, 3), "float64")
    with pytest.raises(ValueError, match="float64"):
        cb.gemm(d64, b, c)
    with pytest.raises(ValueError, match="float64"):
        cb.fill(d64, 1.0)
    with pytest.raises(ValueError, match="uint32"):
        cb.softmax_xent(c, dev.buffer(4), dev.buffer(1),
                        dev.buffer(1, "uint32"))
    with pytest.raises(ValueError, match="unknown elementwise op"):
        cb.elementwise("pow", a, a, a)
    with pytest.raises(ValueError, match="fill"):
        cb.fill(c, 1.0, count=-1)
    with pytest.raises(ValueError, match="im2col"):
        cb.im2col((1, 2), a, b)          # not a window
    with pytest.raises(ValueError):
        cb.fill("not a buffer", 1.0)
    assert len(cb) == 0 and cb.nbytes == 0   # nothing half-appended
    cb.gemm(a, b, c)
    assert len(cb) == 1
    run(dev, cb)


def test_out_of_range_offset(dev):
    b = dev.buffer(16)
    cb = vtpu.CommandBuffer(dev)
    with pytest.raises(ValueError, match="offset"):
        cb.fill((b, b.size), 1.0, count=1)
    with pytest.raises(ValueError, match="offset"):
        cb.fill((b, -4), 1.0, count=1)
    assert len(cb) == 0


def test_buffer_of_another_device(dev):
    with vtpu.Device("cpu") as other:
        mine, theirs = dev.buffer(4), other.buffer(4)
        cb = vtpu.CommandBuffer(dev).fill(mine, 1.0)
        with pytest.raises(ValueError, match="buffer of"):
            cb.copy(mine, theirs)
        with pytest.raises(ValueError, match="submitted to"):
            other.queue().submit(cb)
        run(dev, cb)


def test_closed_device(dev):
    b = dev.buffer(8)
    q = dev.queue()
    cb = vtpu.CommandBuffer(dev).fill(b, 1.0)
    view = b.array
    view[:] = 6.0
    dev.close()
    dev.close()                         # harmless
    assert dev.closed and b.closed and q.closed
    for use in (lambda: dev.buffer(4), dev.queue, lambda: dev.param(0),
                lambda: dev.info, lambda: b.array, lambda: q.submit(cb),
                lambda: vtpu.CommandBuffer(dev).fill(b, 1.0)):
        with pytest.raises(vtpu.VtpuError) as e:
            use()
        assert e.value.errno == errno.EBADF and "closed" in str(e.value)
    gc.collect()
    assert np.array_equal(view, [6.0] * 8)    # still mapped, no crash


def test_closed_buffer(dev):
    b, other = dev.buffer(1024), dev.buffer(1024)
    view = b.array
    view[:] = np.arange(1024)
    cb = vtpu.CommandBuffer(dev).copy(other, b)
    b.close()
    b.close()                           # harmless
    with pytest.raises(vtpu.VtpuError, match="closed"):
        b.array
    with pytest.raises(vtpu.VtpuError, match="closed"):
        vtpu.CommandBuffer(dev).fill(b, 1.0)
    with pytest.raises(vtpu.VtpuError, match="closed"):
        dev.queue().submit(cb)
    del b
    gc.collect()
    # the view keeps the mapping: readable and writable, no crash
    assert np.array_equal(view, np.arange(1024))
    view[:] = 1.0
    assert view.sum() == 1024
    run(dev, vtpu.CommandBuffer(dev).fill(other, 2.0))
    assert other.array[0] == 2.0


def test_rejected_job_says_where_and_why(dev):
    b, small = dev.buffer(1024), dev.buffer(4)
    cb = vtpu.CommandBuffer(dev).fill(b, 1.0)
    cb.fill(small, 2.0, count=small.size // 4 + 1)   # one past the end
    with pytest.raises(vtpu.VtpuError) as e:
        dev.queue().submit(cb)
    err = e.value
    assert err.errno == errno.EINVAL
    assert (err.command, err.opcode, err.operand, err.reason) == \
        (1, "FILL", "dst", "out_of_bounds")
    assert err.offset == ffi.sizeof("struct vtpu_cmd_fill")
    assert "command 1 (FILL)" in str(err) and "operand dst" in str(err)
    assert "%d bytes" % small.size in str(err)
    assert not b.array.any()            # nothing ran

    a, c = dev.buffer((4, 1100)), dev.buffer((4, 3))
    cb = vtpu.CommandBuffer(dev).gemm(a, (small, 0), c)   # B: 1100 x 3
    with pytest.raises(vtpu.VtpuError) as e:
        dev.queue().submit(cb)
    assert (e.value.command, e.value.opcode, e.value.operand,
            e.value.reason) == (0, "GEMM", "B", "out_of_bounds")

    cb = vtpu.CommandBuffer(dev).fill((b, 2), 1.0, count=1)
    with pytest.raises(vtpu.VtpuError) as e:
        dev.queue().submit(cb)
    assert (e.value.opcode, e.value.reason) == ("FILL", "misaligned")
    assert "not a multiple of 4" in str(e.value)


def test_repeat_with_strides(dev):
    src, dst = dev.buffer(1024), dev.buffer(1024)     # a page each
    src.array[:] = np.arange(1024)
    cb = vtpu.CommandBuffer(dev).copy(dst, src, nbytes=16)
    run(dev, cb, repeat=4, strides={src: 16, dst: 16})
    assert np.array_equal(dst.array[:16], np.arange(16))
    assert not dst.array[16:].any()
    with pytest.raises(vtpu.VtpuError) as e:
        dev.queue().submit(cb, repeat=2, strides=[4096, 4096])
    assert e.value.reason == "bad_stride_repeat"
    assert e.value.command is None and e.value.buffer in (0, 1)
    with pytest.raises(ValueError, match="one per buffer"):
        dev.queue().submit(cb, repeat=2, strides=[16])


def test_empty_command_buffer(dev):
    with pytest.raises(ValueError, match="empty"):
        dev.queue().submit(vtpu.CommandBuffer(dev))


# ---- the training ops, against numpy ---------------------------------------

def im2col_ref(x, win):
    n, h, w, c = x.shape
    oh, ow = win.out_shape
    xp = np.pad(x, ((0, 0), (win.pad_h,) * 2, (win.pad_w,) * 2, (0, 0)))
    cols = np.empty((n, oh, ow, win.kh, win.kw, c), np.float32)
    for ky in range(win.kh):
        for kx in range(win.kw):
            cols[:, :, :, ky, kx] = xp[:, ky:ky + win.stride_h * oh:
                                       win.stride_h,
                                       kx:kx + win.stride_w * ow:
                                       win.stride_w]
    return cols.reshape(n * oh * ow, -1)


def col2im_ref(cols, win):
    oh, ow = win.out_shape
    cols = cols.reshape(win.n, oh, ow, win.kh, win.kw, win.c)
    xp = np.zeros((win.n, win.h + 2 * win.pad_h, win.w + 2 * win.pad_w,
                   win.c), np.float64)
    for ky in range(win.kh):
        for kx in range(win.kw):
            xp[:, ky:ky + win.stride_h * oh:win.stride_h,
               kx:kx + win.stride_w * ow:win.stride_w] += cols[:, :, :, ky,
                                                              kx]
    return xp[:, win.pad_h:win.pad_h + win.h, win.pad_w:win.pad_w + win.w]


def filled(dev, array):
    buf = dev.buffer(array.shape, array.dtype)
    buf.array[:] = array
    return buf


def test_im2col_col2im_conv_and_gradients(dev):
    win = vtpu.Window(n=2, h=5, w=4, c=3, kh=3, kw=3, pad_h=1, pad_w=1)
    oh, ow = win.out_shape
    oc, k = 4, 3 * 3 * 3
    x = filled(dev, rand((2, 5, 4, 3), 10))
    w = filled(dev, rand((k, oc), 11))
    bias = filled(dev, rand(oc, 12))
    dy = filled(dev, rand((2, oh, ow, oc), 13))
    cols = dev.buffer((2 * oh * ow, k))
    back = dev.buffer(x.shape)
    y, dx, dw = (dev.buffer(s) for s in (dy.shape, x.shape, w.shape))
    cb = vtpu.CommandBuffer(dev)
    cb.im2col(win, x, cols).col2im(win, cols, back)
    cb.conv(win, x, w, y, bias=bias, relu=True)
    cb.conv_dgrad(win, dy, w, dx).conv_wgrad(win, x, dy, dw)
    run(dev, cb)
    ref_cols = im2col_ref(x.array, win)
    assert np.array_equal(cols.array, ref_cols)
    assert np.allclose(back.array, col2im_ref(ref_cols, win), atol=1e-5)
    want = np.maximum(ref_cols @ w.array + bias.array, 0)
    assert np.allclose(y.array.reshape(-1, oc), want, atol=1e-4)
    assert np.allclose(dw.array, ref_cols.T @ dy.array.reshape(-1, oc),
                       atol=1e-4)
    assert np.allclose(dx.array, col2im_ref(dy.array.reshape(-1, oc) @
                                            w.array.T, win), atol=1e-4)


def test_maxpool_and_grad(dev):
    win = vtpu.Window(2, 4, 4, 3, 2, 2, 2, 2)
    x = filled(dev, rand((2, 4, 4, 3), 20))
    y, index = dev.buffer((2, 2, 2, 3)), dev.buffer((2, 2, 2, 3), "uint32")
    dy = filled(dev, rand((2, 2, 2, 3), 21))
    dx = dev.buffer(x.shape)
    run(dev, vtpu.CommandBuffer(dev).maxpool(win, x, y, index)
        .maxpool_grad(win, dy, index, dx))
    want = x.array.reshape(2, 2, 2, 2, 2, 3).max(axis=(2, 4))
    assert np.array_equal(y.array, want)
    flat = x.array.reshape(2, 16, 3)
    idx = index.array.reshape(2, 4, 3)
    assert np.array_equal(np.take_along_axis(flat, idx, 1),
                          y.array.reshape(2, 4, 3))
    ref = np.zeros((2, 16, 3), np.float32)
    for b in range(2):
        for ch in range(3):
            ref[b, idx[b, :, ch], ch] += dy.array.reshape(2, 4, 3)[b, :, ch]
    assert np.array_equal(dx.array.reshape(2, 16, 3), ref)


def test_conv_pool_and_wgrad(dev):
    win = vtpu.Window(n=2, h=5, w=5, c=2, kh=3, kw=3, pad_h=1, pad_w=1)
    oh, ow = win.out_shape
    oc = 3
    x = filled(dev, rand((2, 5, 5, 2), 30))
    w = filled(dev, rand((18, oc), 31))
    bias = filled(dev, rand(oc, 32))
    ph = (oh - 2) // 2 + 1
    y, index = dev.buffer((2, ph, ph, oc)), dev.buffer((2, ph, ph, oc),
                                                        "uint8")
    dy = filled(dev, rand((2, ph, ph, oc), 33))
    dw, dbias = dev.buffer(w.shape), dev.buffer(oc)
    run(dev, vtpu.CommandBuffer(dev)
        .conv_pool(win, x, w, bias, y, index, pool=2, relu=True)
        .conv_pool_wgrad(win, x, dy, index, dw, dbias, pool=(2, 2)))
    cols = im2col_ref(x.array, win)
    conv = (cols @ w.array + bias.array).reshape(2, oh, ow, oc)
    pooled = conv[:, :2 * ph, :2 * ph].reshape(2, ph, 2, ph, 2, oc)
    assert np.allclose(y.array, np.maximum(pooled.max(axis=(2, 4)), 0),
                       atol=1e-4)
    g = np.zeros_like(conv)
    for b, py, px, o in np.ndindex(*index.array.shape):
        r = index.array[b, py, px, o]
        if r != lib.VTPU_CONV_NO_ROUTE:
            g[b, 2 * py + r // 2, 2 * px + r % 2, o] += dy.array[b, py, px, o]
    assert (index.array != lib.VTPU_CONV_NO_ROUTE).any()
    assert np.allclose(dw.array, cols.T @ g.reshape(-1, oc), atol=1e-4)
    assert np.allclose(dbias.array, g.reshape(-1, oc).sum(0), atol=1e-4)


def test_optimizers(dev):
    n = 32
    p0, g0 = rand(n, 40), rand(n, 41)
    p, g, mom = filled(dev, p0), filled(dev, g0), dev.buffer(n)
    run(dev, vtpu.CommandBuffer(dev).sgd(p, g, mom, lr=0.1, momentum=0.9,
                                         weight_decay=0.01))
    step = g0 + 0.01 * p0               # the first step: b = g
    assert np.allclose(mom.array, step, atol=1e-6)
    assert np.allclose(p.array, p0 - 0.1 * step, atol=1e-6)

    p, m, v, state = filled(dev, p0), dev.buffer(n), dev.buffer(n), \
        dev.buffer(2)
    run(dev, vtpu.CommandBuffer(dev).adam_step(state, beta1=0.8, beta2=0.9)
        .adam(p, g, m, v, state, lr=0.01, beta1=0.8, beta2=0.9, eps=1e-6))
    assert np.allclose(state.array, [0.2, 0.1])
    mm, vv = 0.2 * g0, 0.1 * g0 * g0
    want = p0 - (0.01 / 0.2) * mm / (np.sqrt(vv) / np.sqrt(0.1) + 1e-6)
    assert np.allclose(m.array, mm, atol=1e-6)
    assert np.allclose(v.array, vv, atol=1e-6)
    assert np.allclose(p.array, want, atol=1e-5)


def test_cast_and_dropout(dev):
    n = 256
    f = filled(dev, rand(n, 50) * 100)
    bf, back = dev.buffer(n, "uint16"), dev.buffer(n)
    u8 = filled(dev, np.arange(n, dtype=np.uint8))
    scaled = dev.buffer(n)
    run(dev, vtpu.CommandBuffer(dev).cast("f32_to_bf16", f, bf)
        .cast("bf16_to_f32", bf, back)
        .cast("u8_to_f32", u8, scaled, scale=0.5, shift=-1.0))
    bits = f.array.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    assert np.array_equal(bf.array, rounded)
    assert np.array_equal(back.array.view(np.uint32),
                          bf.array.astype(np.uint32) << 16)
    assert np.array_equal(scaled.array, np.arange(n) * 0.5 - 1.0)

    x = filled(dev, rand(n, 51))
    z, mask, stepno = dev.buffer(n), dev.buffer(n), dev.buffer(1)
    masks = []
    for s in (0.0, 0.0, 1.0):
        stepno.array[0] = s
        run(dev, vtpu.CommandBuffer(dev).dropout(x, z, mask, stepno,
                                                 rate=0.5, seed=7))
        assert set(np.unique(mask.array)) <= {0.0, 2.0}
        assert np.array_equal(z.array, x.array * mask.array)
        masks.append(mask.array.copy())
    assert 0.3 < (masks[0] != 0).mean() < 0.7
    assert np.array_equal(masks[0], masks[1])       # same step, same mask
    assert not np.array_equal(masks[0], masks[2])   # next step, new mask
