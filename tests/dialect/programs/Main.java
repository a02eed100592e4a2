import java.util.Scanner;
// ward's own check for the dialects: the sum of two numbers, the arguments' count.
public class Main {
	public static void main(String[] args) {
		Scanner in = new Scanner(System.in);
		long a = in.nextLong(), b = in.nextLong();
		System.out.println("sum " + (a + b) + " args " + args.length);
	}
}
