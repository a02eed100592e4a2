#include <iostream>
// ward's own check for the dialects: the sum of two numbers, the arguments' count.
int main(int argc, char **argv)
{
	long a, b;
	if (!(std::cin >> a >> b))
		return 2;
	std::cout << "sum " << a + b << " args " << argc - 1 << "\n";
	return 0;
}
