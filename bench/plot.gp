# bench/plot.gp — latency and throughput of ward against bwrap and bare
# fork+exec, from the data files bench/wbench writes (-d DIR).
#
#   gnuplot -e "datadir='bench/out'; outfile='docs/bench.png'; \
#               subtitle='host, date'; ncallers=2" bench/plot.gp
#
# latency.dat:    name median p99 min p90           (ms)
# throughput.dat: name "2 callers" "8 callers" ...  (runs/s)
if (!exists("datadir"))  datadir  = 'bench/out'
if (!exists("outfile"))  outfile  = 'docs/bench.png'
if (!exists("subtitle")) subtitle = ''
if (!exists("ncallers")) ncallers = 2

# pngcairo draws anti-aliased text; plain png (libgd) is the fallback.
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
	set terminal pngcairo size 1400,560 enhanced font "DejaVu Sans,11"
} else {
	set terminal png size 1400,560 font "DejaVu Sans,11"
}
set output outfile

lat = datadir.'/latency.dat'
tput = datadir.'/throughput.dat'

set multiplot layout 1,2 title "ward start-up against bwrap and bare fork+exec of /bin/true\n{/*0.8 ".subtitle."}"

set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics lc rgb "#dddddd"
set key top right
set xtics rotate by -25 nomirror
set yrange [0:*]
set offsets 0, 0, graph 0.15, 0
# The first line of each data file names the columns.
set key autotitle columnhead
# A clustered histogram of N series with gap 1 puts series j of row r at
# x = r + (j - (N-1)/2) / (N+1); the value labels sit on those bars.
barx(r, j, n) = r + (j - (n - 1) / 2.0) / (n + 1.0)

# Log scale: on a busy host p99 can be many times the median, and a linear
# axis would flatten the medians that the comparison is about.
set title "Latency, spawn to reap (lower is better; log scale)"
set ylabel "ms"
set logscale y
# Bottom of the axis: the decade below the smallest median.
stats lat using 2 nooutput
set yrange [10**floor(log10(STATS_min)):*]
set offsets 0, 0, 0, 0
set mytics 10
plot lat using 2:xtic(1) title "median" lc rgb "#4c72b0", \
     ''  using 3 title "p99" lc rgb "#dd8452", \
     ''  using (barx($0, 0, 2)):2:(sprintf("%.2f", $2)) with labels offset 0,0.7 font ",9" notitle, \
     ''  using (barx($0, 1, 2)):3:(sprintf("%.1f", $3)) with labels offset 0,0.7 font ",9" notitle

unset logscale y
set mytics default
set yrange [0:*]
set offsets 0, 0, graph 0.15, 0
set title "Throughput, parallel callers (higher is better)"
set ylabel "runs/s"
plot for [i=2:ncallers+1] tput using i:xtic(1) title columnheader(i) \
         lc rgb word("#55a868 #c44e52 #8172b3 #937860", (i-2)%4+1), \
     for [i=2:ncallers+1] tput using (barx($0, i-2, ncallers)):i:(sprintf("%.0f", column(i))) \
         with labels offset 0,0.7 font ",9" notitle

unset multiplot
