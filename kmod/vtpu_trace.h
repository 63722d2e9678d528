/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tracepoints: a job's life and buffers' births, for a device timeline in
 * perf and trace-cmd (`trace-cmd record -e vtpu`, `perf record -e 'vtpu:*'`).
 *
 * A job is named by its device, queue and seqno, as its fence is
 * (timeline "vtpuD-qQ", seqno): vtpu_job_submit when it is queued,
 * vtpu_job_deps_done when its in-fence signalled, vtpu_job_start when the
 * dispatcher takes it, vtpu_job_group after each group of commands ran
 * (the first command's index and opcode, how many, their tiles) and
 * vtpu_job_done with its status (0 or -errno).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM vtpu

#if !defined(VTPU_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define VTPU_TRACE_H

#include <linux/tracepoint.h>

#include "vtpu_drv.h"

DECLARE_EVENT_CLASS(vtpu_job,
	TP_PROTO(struct vtpu_kjob *job),
	TP_ARGS(job),
	TP_STRUCT__entry(
		__field(u32, dev)
		__field(u32, queue)
		__field(u64, seqno)
		__field(u32, cmds_size)
		__field(u32, repeat)
	),
	TP_fast_assign(
		__entry->dev = job->queue->vdev->index;
		__entry->queue = job->queue->id;
		__entry->seqno = job->seqno;
		__entry->cmds_size = job->cmds_size;
		__entry->repeat = job->repeat;
	),
	TP_printk("dev=%u queue=%u seqno=%llu cmds_size=%u repeat=%u",
		  __entry->dev, __entry->queue, __entry->seqno,
		  __entry->cmds_size, __entry->repeat)
);

DEFINE_EVENT(vtpu_job, vtpu_job_submit,
	TP_PROTO(struct vtpu_kjob *job),
	TP_ARGS(job)
);

DEFINE_EVENT(vtpu_job, vtpu_job_deps_done,
	TP_PROTO(struct vtpu_kjob *job),
	TP_ARGS(job)
);

DEFINE_EVENT(vtpu_job, vtpu_job_start,
	TP_PROTO(struct vtpu_kjob *job),
	TP_ARGS(job)
);

TRACE_EVENT(vtpu_job_group,
	TP_PROTO(struct vtpu_kjob *job, u32 iter, u32 first, u32 opcode,
		 u32 nops, u32 ntiles),
	TP_ARGS(job, iter, first, opcode, nops, ntiles),
	TP_STRUCT__entry(
		__field(u32, dev)
		__field(u32, queue)
		__field(u64, seqno)
		__field(u32, iter)
		__field(u32, first)
		__field(u32, opcode)
		__field(u32, nops)
		__field(u32, ntiles)
	),
	TP_fast_assign(
		__entry->dev = job->queue->vdev->index;
		__entry->queue = job->queue->id;
		__entry->seqno = job->seqno;
		__entry->iter = iter;
		__entry->first = first;
		__entry->opcode = opcode;
		__entry->nops = nops;
		__entry->ntiles = ntiles;
	),
	TP_printk("dev=%u queue=%u seqno=%llu iter=%u cmd=%u op=%s nops=%u tiles=%u",
		  __entry->dev, __entry->queue, __entry->seqno, __entry->iter,
		  __entry->first, vtpu_engine_op_name(__entry->opcode),
		  __entry->nops, __entry->ntiles)
);

TRACE_EVENT(vtpu_job_done,
	TP_PROTO(struct vtpu_kjob *job, int error),
	TP_ARGS(job, error),
	TP_STRUCT__entry(
		__field(u32, dev)
		__field(u32, queue)
		__field(u64, seqno)
		__field(int, error)
	),
	TP_fast_assign(
		__entry->dev = job->queue->vdev->index;
		__entry->queue = job->queue->id;
		__entry->seqno = job->seqno;
		__entry->error = error;
	),
	TP_printk("dev=%u queue=%u seqno=%llu error=%d",
		  __entry->dev, __entry->queue, __entry->seqno,
		  __entry->error)
);

DECLARE_EVENT_CLASS(vtpu_bo,
	TP_PROTO(struct vtpu_file *vfile, u32 handle, u64 size),
	TP_ARGS(vfile, handle, size),
	TP_STRUCT__entry(
		__field(u32, dev)
		__field(u64, client)
		__field(u32, handle)
		__field(u64, size)
	),
	TP_fast_assign(
		__entry->dev = vfile->vdev->index;
		__entry->client = vfile->client_id;
		__entry->handle = handle;
		__entry->size = size;
	),
	TP_printk("dev=%u client=%llu handle=%u size=%llu",
		  __entry->dev, __entry->client, __entry->handle,
		  __entry->size)
);

DEFINE_EVENT(vtpu_bo, vtpu_bo_create,
	TP_PROTO(struct vtpu_file *vfile, u32 handle, u64 size),
	TP_ARGS(vfile, handle, size)
);

DEFINE_EVENT(vtpu_bo, vtpu_bo_import,
	TP_PROTO(struct vtpu_file *vfile, u32 handle, u64 size),
	TP_ARGS(vfile, handle, size)
);

#endif /* VTPU_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE vtpu_trace
#include <trace/define_trace.h>
