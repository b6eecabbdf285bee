# The predict-unseen study's figure (run.sh): predicted against measured step time of every
# configuration, each predicted from a fit of ONE measured 1F1B run, with the +-5% band.
# gnuplot -e "datafile='...'; outfile='...'".
set terminal pngcairo size 1200,800 font ",11"
set output outfile
set title "Predicting unseen configurations on the CPU engine (p = 2, 2 cores)\nsimulate --fit: a cost model fitted to one measured run (gpt-w256-l8, 1F1B, m = 8) and the GEMM table;\nmeasured: the median of 4 rounds"
set xlabel "measured step time [ms]"
set ylabel "predicted step time [ms]"
set logscale xy
set grid
set key top left box opaque
set xtics (50, 70, 100, 150, 200, 300, 500, 700, 1000, 1500, 2000, 3000)
set ytics (50, 70, 100, 150, 200, 300, 500, 700, 1000, 1500, 2000, 3000)
set size ratio -1
set xrange [40:3000]
set yrange [40:3000]
plot x title "predicted = measured" lc rgb "#444444", \
     1.05 * x title "±5 %" dt 2 lc rgb "#888888", 0.95 * x notitle dt 2 lc rgb "#888888", \
     datafile using ((strcol(1) eq "predict-unseen-schedules") ? $7 : 1/0):8 \
       title "15 schedules, m = 8 and 16" pt 7 ps 1.2 lc rgb "#1f77b4", \
     '' using ((strcol(1) eq "predict-unseen-shapes") ? $7 : 1/0):8 \
       title "m, micro-batch, length, width, depth" \
       pt 5 ps 1.2 lc rgb "#d62728", \
     '' using ((strcol(1) eq "predict-unseen-gaps") ? $7 : 1/0):8 \
       title "6 schedules, m = 2 and 4 (the largest bubble gaps)" pt 9 ps 1.4 lc rgb "#2ca02c", \
     '' using ((strcol(1) eq "predict-unseen-ranking") ? $7 : 1/0):8 \
       title "GPipe, 1F1B, interleaved 1F1B, ZB-H1, m = 2 and 3" pt 11 ps 1.4 lc rgb "#9467bd", \
     '' using ((strcol(1) eq "predict-unseen-zb") ? $7 : 1/0):8 \
       title "GPipe, 1F1B, ZB-H1, m = 2 and 3" pt 13 ps 1.4 lc rgb "#ff7f0e"
