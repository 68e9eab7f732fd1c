/* One line per MPI rank: its rank, the world size, its host, and the libpmix that this process
 * and its parent (slurmstepd, which launched it through Slurm's mpi/pmix plugin) have mapped,
 * as path and inode from /proc/<pid>/maps. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void libpmix(pid_t pid, char *out, size_t len)
{
	char path[64], line[4096];
	FILE *maps;

	snprintf(out, len, "none");
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(maps = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long inode;
		char file[4000];

		if (sscanf(line, "%*s %*s %*s %*s %lu %3999s", &inode, file) == 2 &&
		    strstr(file, "/libpmix.so")) {
			snprintf(out, len, "%s@%lu", file, inode);
			break;
		}
	}
	fclose(maps);
}

int main(int argc, char **argv)
{
	int rank, size;
	char host[256], mine[4096], stepd[4096];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	gethostname(host, sizeof(host));
	libpmix(getpid(), mine, sizeof(mine));
	libpmix(getppid(), stepd, sizeof(stepd));
	/* A collective, so every rank really joined one world. */
	int sum = 0;
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	printf("rank=%d size=%d host=%s sum=%d libpmix=%s stepd_libpmix=%s\n", rank, size, host, sum,
	       mine, stepd);
	MPI_Finalize();
	return 0;
}
