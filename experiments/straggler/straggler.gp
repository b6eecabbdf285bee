# The straggler study's figure (run.sh): measured (points) and predicted (lines) step time per
# schedule against the speed of the slowed rank. gnuplot -e "datafile='...'; outfile='...'".
set terminal pngcairo size 1100,650 font ",11"
set output outfile
set title "Straggler on the CPU engine: p = 2, gpt-w256, m = 8, rank 1 at speed S\nmeasured (points) vs simulate --costs-from the unslowed run --rank-speed 1=S (lines)"
set xlabel "speed S of pipeline rank 1"
set ylabel "step time [ms]"
set xrange [1.05:0.2]
set key top left
set grid

S = "1f1b zb-h1 interleaved-1f1b"
plot for [i=1:words(S)] sprintf("< grep '^%s ' %s", word(S, i), datafile) using 2:4 \
       with lines lw 2 lc i title word(S, i)." predicted", \
     for [i=1:words(S)] sprintf("< grep '^%s ' %s", word(S, i), datafile) using 2:3 \
       with points pt 7 ps 1.5 lc i title word(S, i)." measured"
