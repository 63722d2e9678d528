/* SPDX-License-Identifier: MIT */
/*
 * Data parallelism across processes (libvtpu/mpi.c, over MPI): what
 * model.c calls. Without MPI at build time the functions exist and a
 * process is rank 0 of 1 (vd_size() 1), so model.c never calls the rest.
 */
#ifndef LIBVTPU_DIST_PRIV_H
#define LIBVTPU_DIST_PRIV_H

#include <stddef.h>
#include <stdint.h>

/* ranks in the job (1: not under mpirun, or no MPI), this process's */
int vd_size(void);
int vd_rank(void);

/*
 * Every rank gives @n values named @names; all ranks compare every rank's
 * with rank 0's. Return: 0 (all equal), -EINVAL with "rank R's @what
 * differs from rank 0's: NAME: X vs Y" in @err (the same on every rank),
 * -ETIMEDOUT or -EIO.
 */
int vd_agree(const uint64_t *vals, uint32_t n, const char *const *names,
	     const char *what, char *err, size_t errlen);

/* Rank 0's @bytes at @buf into every rank's (the state at fit's start). */
int vd_bcast(void *buf, uint64_t bytes, const char *what, char *err,
	     size_t errlen);

/*
 * The gradient all-reduce across ranks, in a fixed order: @count floats
 * at @grads (this rank's sum of its replicas') become the sum over the
 * ranks, rank 0's + rank 1's + ..., every rank summing its slice (whole
 * 16-float blocks) of all, with denormals flushed as the engine does,
 * then gathering the others' slices. @mine (@mbytes bytes: this rank's
 * metrics) is gathered into @all (size x @mbytes, in rank order) at the
 * same time. @step (counted from 1 over the fit) is for the messages.
 * Return: 0, -ETIMEDOUT (no answer for the timeout: the message names
 * the step) or -EIO.
 */
int vd_allreduce(float *grads, uint64_t count, const void *mine,
		 void *all, uint32_t mbytes, uint64_t step, char *err,
		 size_t errlen);

#endif /* LIBVTPU_DIST_PRIV_H */
