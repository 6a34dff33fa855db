/* embed.c — build-time tool: turns a file into a C source defining
 *   const char NAME[] = { ..., 0 };
 * so the default model travels inside the binary (no file lookup at run
 * time). Usage: sb-embed INPUT OUTPUT NAME */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s INPUT OUTPUT NAME\n", argv[0]);
		return 2;
	}
	FILE *in = fopen(argv[1], "rb");
	if (!in) {
		perror(argv[1]);
		return 1;
	}
	FILE *out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		fclose(in);
		return 1;
	}
	fprintf(out, "/* generated from %s by sb-embed; do not edit */\n", argv[1]);
	fprintf(out, "extern const char %s[];\nconst char %s[] = {\n", argv[3], argv[3]);
	int c;
	unsigned long n = 0;
	while ((c = fgetc(in)) != EOF) {
		fprintf(out, "%d,", c);
		if (++n % 24 == 0)
			fputc('\n', out);
	}
	fprintf(out, "0};\n");
	int bad = ferror(in) || ferror(out);
	fclose(in);
	if (fclose(out) != 0)
		bad = 1;
	return bad ? 1 : 0;
}
