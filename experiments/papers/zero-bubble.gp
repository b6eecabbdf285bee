# Zero Bubble paper Table 5 (arXiv:2401.10241v1) against pipette: bubble rate per setting.
# Inputs (gnuplot -e): data (columns: index, label, then paper/pipette pairs for 1F1B, 1F1B-I,
# ZB-H1, ZB-H2, then the paper's ZB-2p), out (PNG).
set terminal pngcairo size 1200,650 font "Sans,11"
set output out
set termoption noenhanced
set title "Zero Bubble paper Table 5: bubble rate (cost - m(F+B+W)) / cost at the profiled times of Table 9\n(points: published, crosses: pipette's evaluated schedule with T_comm as latency)"
set ylabel "bubble rate (fraction of the cost)"
set xlabel "model, microbatches (p = 8, 8, 16, 32)"
set xtics rotate by -30 nomirror
set ytics nomirror
set grid ytics
set key outside right top
set xrange [0.5:12.5]
set yrange [0:*]
colors = "#0072B2 #E69F00 #009E73 #D55E00"
names = "1F1B 1F1B-I ZB-H1 ZB-H2"
plot for [k=1:4] data using 1:(column(1 + 2*k)):xtic(2) with points pt 7 ps 1.6 \
       lc rgb word(colors, k) title word(names, k) . " (paper)", \
     for [k=1:4] data using 1:(column(2 + 2*k)) with points pt 2 ps 2.2 lw 2 \
       lc rgb word(colors, k) title word(names, k) . " (pipette)", \
     data using 1:11 with points pt 6 ps 1.4 lc rgb "#CC79A7" title "ZB-2p (paper; not reproduced)"
