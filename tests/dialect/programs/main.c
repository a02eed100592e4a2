#include <stdio.h>
/* ward's own check for the dialects: the sum of two numbers, the arguments' count. */
int main(int argc, char **argv)
{
	long a, b;
	if (scanf("%ld %ld", &a, &b) != 2)
		return 2;
	printf("sum %ld args %d\n", a + b, argc - 1);
	return 0;
}
